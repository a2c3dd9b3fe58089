import { isAny, isBool, isSize, isUint, oneOf, type ValueCheck } from './config-keys.ts';
import { ValidationError } from './errors.ts';

type DeviceTable = Record<string, ValueCheck>;

const absPath: ValueCheck = (v) => (v.startsWith('/') && !v.split('/').includes('..') ? undefined : 'must be an absolute path without ".."');
const hostNameish: ValueCheck = (v) => (/^[A-Za-z0-9_.@-]{1,15}$/.test(v) ? undefined : 'must be a valid interface name (at most 15 characters)');
const mac: ValueCheck = (v) => (/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(v) ? undefined : 'must be a MAC address');
const mode: ValueCheck = (v) => (/^0?[0-7]{3,4}$/.test(v) ? undefined : 'must be an octal mode such as 0660');

/** Device properties per type. A device of another type, or an unknown property, is refused. */
const DEVICE_TYPES: Record<string, DeviceTable> = {
  disk: {
    path: absPath,
    source: isAny,
    pool: isAny,
    size: isSize,
    readonly: isBool,
    optional: isBool,
    recursive: isBool,
    propagation: oneOf('private', 'shared', 'slave', 'unbindable', 'rprivate', 'rshared', 'rslave', 'runbindable'),
  },
  nic: {
    nictype: oneOf('bridged'),
    parent: hostNameish,
    network: isAny,
    name: hostNameish,
    host_name: hostNameish,
    hwaddr: mac,
    mtu: isUint,
    'ipv4.address': isAny,
    'ipv6.address': isAny,
    'security.mac_filtering': isBool,
  },
  'unix-char': { path: absPath, source: absPath, major: isUint, minor: isUint, uid: isUint, gid: isUint, mode, required: isBool },
  'unix-block': { path: absPath, source: absPath, major: isUint, minor: isUint, uid: isUint, gid: isUint, mode, required: isBool },
  none: {},
};

/** Validate a devices map (container or profile). Cross-object checks (pool exists...) happen where the objects are known. */
export function validateDevices(devices: Record<string, Record<string, string>>): void {
  for (const [name, dev] of Object.entries(devices)) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) throw new ValidationError(`Invalid device name "${name}"`);
    const type = dev.type;
    if (!type) throw new ValidationError(`Device "${name}" has no type`);
    const table = DEVICE_TYPES[type];
    if (!table) throw new ValidationError(`Device "${name}": unsupported device type "${type}" (supported: ${Object.keys(DEVICE_TYPES).join(', ')})`);
    for (const [k, v] of Object.entries(dev)) {
      if (k === 'type') continue;
      const check = table[k];
      if (!check) throw new ValidationError(`Device "${name}" (${type}): unknown property "${k}"`);
      const err = check(v);
      if (err) throw new ValidationError(`Device "${name}" (${type}): invalid "${k}": ${err}`);
    }
    if (type === 'disk') {
      if (!dev.path) throw new ValidationError(`Device "${name}" (disk): "path" is required`);
      if (dev.path !== '/' && !dev.source) throw new ValidationError(`Device "${name}" (disk): "source" is required unless it is the root disk (path /)`);
      if (dev.path === '/' && !dev.pool) throw new ValidationError(`Device "${name}" (disk): the root disk needs a "pool"`);
    }
    if (type === 'nic' && !dev.parent && !dev.network) throw new ValidationError(`Device "${name}" (nic): "parent" (a host bridge) or "network" is required`);
    if ((type === 'unix-char' || type === 'unix-block') && !dev.path && !dev.source)
      throw new ValidationError(`Device "${name}" (${type}): "path" or "source" is required`);
  }
}

import { isBool, isSize, isUint, oneOf, type ValueCheck } from './config-keys.ts';
import { checkHwDevice, HW_DEVICE_TABLES } from './devices-hw.ts';
import { checkNic, NIC_KEYS, range } from './devices-nic.ts';
import { ValidationError } from './errors.ts';
import { checkProxy, PROXY_KEYS } from './devices-proxy.ts';

type DeviceTable = Record<string, ValueCheck>;
type Device = Record<string, string>;

const absPath: ValueCheck = (v) =>
  v.startsWith('/') && !v.split('/').includes('..') && !/[\n\r\0]/.test(v)
    ? undefined
    : 'must be an absolute path without ".."';
const mode: ValueCheck = (v) => (/^0?[0-7]{3}$/.test(v) ? undefined : 'must be an octal permission mode such as 0660');
/** A disk `source`: a host path, or with `pool` a custom volume name (checked per device below). */
const diskSource: ValueCheck = (v) =>
  v !== '' && !/[\n\r\0]/.test(v) ? undefined : 'must not be empty or contain line breaks';

const unix: DeviceTable = {
  path: absPath,
  source: absPath,
  major: range(0, 4095),
  minor: range(0, 1048575),
  uid: isUint,
  gid: isUint,
  mode,
  required: isBool,
};

/** Device properties per type. A device of another type, or an unknown property, is refused. */
const DEVICE_TYPES: Record<string, DeviceTable> = {
  disk: {
    path: absPath,
    source: diskSource,
    pool: diskSource,
    size: isSize,
    readonly: isBool,
    optional: isBool,
    recursive: isBool,
    shift: isBool,
    propagation: oneOf('private', 'shared', 'slave', 'unbindable', 'rprivate', 'rshared', 'rslave', 'runbindable'),
  },
  nic: NIC_KEYS,
  'unix-char': unix,
  'unix-block': unix,
  ...HW_DEVICE_TABLES,
  proxy: PROXY_KEYS,
  none: {},
};

function checkDisk(name: string, dev: Device): void {
  const where = `Device "${name}" (disk)`;
  if (!dev.path) throw new ValidationError(`${where}: "path" is required`);
  if (dev.path === '/') {
    if (!dev.pool) throw new ValidationError(`${where}: the root disk needs a "pool"`);
    if (dev.source !== undefined) throw new ValidationError(`${where}: the root disk takes no "source"`);
    return;
  }
  if (!dev.source) throw new ValidationError(`${where}: "source" is required unless it is the root disk (path /)`);
  if (dev.size !== undefined) throw new ValidationError(`${where}: "size" applies only to the root disk`);
  if (dev.pool !== undefined) {
    if (dev.source.includes('/'))
      throw new ValidationError(
        `${where}: with "pool", "source" is the name of a custom volume on that pool, not a path`,
      );
    if (dev.optional !== undefined || dev.shift !== undefined)
      throw new ValidationError(`${where}: "optional" and "shift" apply to host paths, not to custom volumes`);
  } else {
    const err = absPath(dev.source);
    if (err)
      throw new ValidationError(
        `${where}: invalid "source": a host path that ${err} (or give "pool" to mount a custom volume)`,
      );
  }
}

/** The network (managed, or a host bridge) a nic joins: `network`, else `parent`. */
export const nicParentOf = (dev: Device): string => dev.network ?? dev.parent ?? '';

/** Validate a devices map (container or profile). Cross-object checks (pool exists...) happen where the objects are known. */
export function validateDevices(devices: Record<string, Device>): void {
  for (const [name, dev] of Object.entries(devices)) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) throw new ValidationError(`Invalid device name "${name}"`);
    const type = dev.type;
    if (!type) throw new ValidationError(`Device "${name}" has no type`);
    const table = DEVICE_TYPES[type];
    if (!table)
      throw new ValidationError(
        `Device "${name}": unsupported device type "${type}" (supported: ${Object.keys(DEVICE_TYPES).join(', ')})`,
      );
    for (const [k, v] of Object.entries(dev)) {
      if (k === 'type') continue;
      const check = table[k];
      if (!check) throw new ValidationError(`Device "${name}" (${type}): unknown property "${k}"`);
      const err = check(v);
      if (err) throw new ValidationError(`Device "${name}" (${type}): invalid "${k}": ${err}`);
    }
    if (type === 'disk') checkDisk(name, dev);
    if (type === 'nic') checkNic(name, dev);
    if (HW_DEVICE_TABLES[type]) checkHwDevice(name, dev);
    if (type === 'proxy') checkProxy(name, dev);
    if ((type === 'unix-char' || type === 'unix-block') && !dev.path && !dev.source)
      throw new ValidationError(`Device "${name}" (${type}): "path" or "source" is required`);
  }
}

/**
 * Checks across the expanded devices of one container (profiles + its own): two disks on the same
 * path, or two NICs with the same name inside, would hide or break each other.
 */
export function validateExpandedDevices(devices: Record<string, Device>): void {
  const paths = new Map<string, string>();
  const nics = new Map<string, string>();
  for (const [name, dev] of Object.entries(devices)) {
    if (dev.type === 'disk' && dev.path) {
      const p = dev.path.replace(/\/+$/, '') || '/';
      const other = paths.get(p);
      if (other !== undefined) throw new ValidationError(`Devices "${other}" and "${name}" are both mounted at "${p}"`);
      paths.set(p, name);
    }
    if (dev.type === 'nic') {
      const n = dev.name ?? name;
      const other = nics.get(n);
      if (other !== undefined)
        throw new ValidationError(`NIC devices "${other}" and "${name}" both use the interface name "${n}"`);
      nics.set(n, name);
    }
  }
}

import { isIPv4, isIPv6 } from 'node:net';
import { isBool, isSize, isUint, oneOf, type ValueCheck } from './config-keys.ts';
import { checkHwDevice, HW_DEVICE_TABLES } from './devices-hw.ts';
import { ValidationError } from './errors.ts';
import { checkProxy, PROXY_KEYS } from './devices-proxy.ts';

type DeviceTable = Record<string, ValueCheck>;
type Device = Record<string, string>;

const absPath: ValueCheck = (v) => (v.startsWith('/') && !v.split('/').includes('..') && !/[\n\r\0]/.test(v) ? undefined : 'must be an absolute path without ".."');
const ifName: ValueCheck = (v) => (/^[A-Za-z0-9_.@-]{1,15}$/.test(v) && v !== '.' && v !== '..' ? undefined : 'must be a valid interface name (at most 15 characters)');
const mac: ValueCheck = (v) => {
  if (!/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(v)) return 'must be a MAC address';
  return (parseInt(v.slice(0, 2), 16) & 1) === 0 ? undefined : 'must be a unicast MAC address (the first octet must be even)';
};
const mode: ValueCheck = (v) => (/^0?[0-7]{3}$/.test(v) ? undefined : 'must be an octal permission mode such as 0660');
const range =
  (min: number, max: number): ValueCheck =>
  (v) =>
    /^\d+$/.test(v) && Number(v) >= min && Number(v) <= max ? undefined : `must be an integer from ${min} to ${max}`;
/** A disk `source`: a host path, or with `pool` a custom volume name (checked per device below). */
const diskSource: ValueCheck = (v) => (v !== '' && !/[\n\r\0]/.test(v) ? undefined : 'must not be empty or contain line breaks');
const networkName: ValueCheck = (v) => (/^[A-Za-z0-9_-]{1,15}$/.test(v) ? undefined : 'must be a network name (at most 15 characters: letters, digits, "_" and "-")');
const ipv4: ValueCheck = (v) => (isIPv4(v) ? undefined : 'must be an IPv4 address');
const ipv6: ValueCheck = (v) => (isIPv6(v) ? undefined : 'must be an IPv6 address');
/** A bit rate in LXD's syntax: `100kbit`, `10Mbit`, `1Gbit` (a bare number is bit/s). */
export const BIT_RATE = /^(\d+(?:\.\d+)?)(bit|kbit|Mbit|Gbit|Tbit)?$/;
const bitRate: ValueCheck = (v) => (BIT_RATE.test(v) ? undefined : 'must be a bit rate such as 100kbit, 10Mbit or 1Gbit');
const cidrList =
  (family: 4 | 6): ValueCheck =>
  (v) => {
    for (const part of v.split(',').map((x) => x.trim())) {
      const [addr, len, extra] = part.split('/');
      const max = family === 4 ? 32 : 128;
      const ok = extra === undefined && (family === 4 ? isIPv4(addr ?? '') : isIPv6(addr ?? '')) && /^\d+$/.test(len ?? '') && Number(len) <= max;
      if (!ok) return `must be a comma-separated list of IPv${family} subnets in CIDR form (bad "${part}")`;
    }
    return undefined;
  };

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
  nic: {
    nictype: oneOf('bridged'),
    parent: ifName,
    network: networkName,
    name: ifName,
    host_name: ifName,
    hwaddr: mac,
    mtu: range(68, 65535),
    vlan: range(1, 4094),
    'ipv4.address': ipv4,
    'ipv6.address': ipv6,
    'ipv4.routes': cidrList(4),
    'ipv6.routes': cidrList(6),
    'limits.ingress': bitRate,
    'limits.egress': bitRate,
    'limits.max': bitRate,
    'security.mac_filtering': isBool,
  },
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
    if (dev.source.includes('/')) throw new ValidationError(`${where}: with "pool", "source" is the name of a custom volume on that pool, not a path`);
    if (dev.optional !== undefined || dev.shift !== undefined) throw new ValidationError(`${where}: "optional" and "shift" apply to host paths, not to custom volumes`);
  } else {
    const err = absPath(dev.source);
    if (err) throw new ValidationError(`${where}: invalid "source": a host path that ${err} (or give "pool" to mount a custom volume)`);
  }
}

function checkNic(name: string, dev: Device): void {
  const where = `Device "${name}" (nic)`;
  if (dev.network !== undefined) {
    if (dev.nictype !== undefined) throw new ValidationError(`${where}: "nictype" must not be set with "network" (the network decides it)`);
    if (dev.parent !== undefined && dev.parent !== dev.network) throw new ValidationError(`${where}: "parent" ("${dev.parent}") and "network" ("${dev.network}") name different networks`);
  } else if (!dev.parent) throw new ValidationError(`${where}: "parent" (a host bridge or managed network) or "network" is required`);
  if (dev['limits.max'] !== undefined && (dev['limits.ingress'] !== undefined || dev['limits.egress'] !== undefined))
    throw new ValidationError(`${where}: "limits.max" sets both directions and cannot be combined with "limits.ingress" or "limits.egress"`);
  if (dev['ipv4.routes'] !== undefined && !dev['ipv4.address']) throw new ValidationError(`${where}: "ipv4.routes" needs a static "ipv4.address" to route through`);
  if (dev['ipv6.routes'] !== undefined && !dev['ipv6.address']) throw new ValidationError(`${where}: "ipv6.routes" needs a static "ipv6.address" to route through`);
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
    if (!table) throw new ValidationError(`Device "${name}": unsupported device type "${type}" (supported: ${Object.keys(DEVICE_TYPES).join(', ')})`);
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
      if (other !== undefined) throw new ValidationError(`NIC devices "${other}" and "${name}" both use the interface name "${n}"`);
      nics.set(n, name);
    }
  }
}

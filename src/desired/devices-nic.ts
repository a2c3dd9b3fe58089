/**
 * nic devices: the keys of every nictype (bridged, macvlan, p2p, physical, sriov) and their checks,
 * registered in devices.ts. What depends on the host (a parent interface that exists, SR-IOV virtual
 * functions) is checked by checkNicHost with the host's answers passed in.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { isBool, oneOf, type ValueCheck } from './config-keys.ts';
import { ValidationError } from './errors.ts';

type Device = Record<string, string>;

export const ifName: ValueCheck = (v) =>
  /^[A-Za-z0-9_.@-]{1,15}$/.test(v) && v !== '.' && v !== '..'
    ? undefined
    : 'must be a valid interface name (at most 15 characters)';
const mac: ValueCheck = (v) => {
  if (!/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(v)) return 'must be a MAC address';
  return (parseInt(v.slice(0, 2), 16) & 1) === 0
    ? undefined
    : 'must be a unicast MAC address (the first octet must be even)';
};
export const range =
  (min: number, max: number): ValueCheck =>
  (v) =>
    /^\d+$/.test(v) && Number(v) >= min && Number(v) <= max ? undefined : `must be an integer from ${min} to ${max}`;
const networkName: ValueCheck = (v) =>
  /^[A-Za-z0-9_-]{1,15}$/.test(v)
    ? undefined
    : 'must be a network name (at most 15 characters: letters, digits, "_" and "-")';
const ipv4: ValueCheck = (v) => (isIPv4(v) ? undefined : 'must be an IPv4 address');
const ipv6: ValueCheck = (v) => (isIPv6(v) ? undefined : 'must be an IPv6 address');
/** A bit rate in LXD's syntax: `100kbit`, `10Mbit`, `1Gbit` (a bare number is bit/s). */
export const BIT_RATE = /^(\d+(?:\.\d+)?)(bit|kbit|Mbit|Gbit|Tbit)?$/;
const bitRate: ValueCheck = (v) =>
  BIT_RATE.test(v) ? undefined : 'must be a bit rate such as 100kbit, 10Mbit or 1Gbit';
const cidrList =
  (family: 4 | 6): ValueCheck =>
  (v) => {
    for (const part of v.split(',').map((x) => x.trim())) {
      const [addr, len, extra] = part.split('/');
      const max = family === 4 ? 32 : 128;
      const ok =
        extra === undefined &&
        (family === 4 ? isIPv4(addr ?? '') : isIPv6(addr ?? '')) &&
        /^\d+$/.test(len ?? '') &&
        Number(len) <= max;
      if (!ok) return `must be a comma-separated list of IPv${family} subnets in CIDR form (bad "${part}")`;
    }
    return undefined;
  };

export const NIC_TYPES = ['bridged', 'macvlan', 'p2p', 'physical', 'sriov'] as const;
export type NicType = (typeof NIC_TYPES)[number];

/** Every nic key and its value check; which nictype takes which key: NIC_TYPE_KEYS. */
export const NIC_KEYS: Record<string, ValueCheck> = {
  nictype: oneOf(...NIC_TYPES),
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
};

const common = ['type', 'nictype', 'name', 'hwaddr', 'mtu'];
const limits = ['limits.ingress', 'limits.egress', 'limits.max'];
/** The keys each nictype takes (LXD's): another is refused naming the nictype. */
const NIC_TYPE_KEYS: Record<NicType, readonly string[]> = {
  bridged: Object.keys(NIC_KEYS).concat('type'),
  macvlan: [...common, 'parent', 'vlan'],
  p2p: [...common, 'host_name', 'ipv4.routes', 'ipv6.routes', ...limits],
  physical: [...common, 'parent', 'vlan'],
  sriov: [...common, 'parent', 'vlan', 'security.mac_filtering'],
};

/** A nic's nictype: its own, else bridged (with `network`, the network's: a bridge). */
export const nicTypeOf = (dev: Device): NicType => (dev.nictype as NicType | undefined) ?? 'bridged';

/** The per-nictype checks of one nic (the values were checked against NIC_KEYS already). */
export function checkNic(name: string, dev: Device): void {
  const nictype = nicTypeOf(dev);
  const where = `Device "${name}" (nic)`;
  const allowed = NIC_TYPE_KEYS[nictype];
  for (const k of Object.keys(dev))
    if (!allowed.includes(k))
      throw new ValidationError(
        `${where}: "${k}" does not apply to nictype=${nictype} (it takes: ${allowed.filter((x) => x !== 'type').join(', ')})`,
      );
  if (dev['limits.max'] !== undefined && (dev['limits.ingress'] !== undefined || dev['limits.egress'] !== undefined))
    throw new ValidationError(
      `${where}: "limits.max" sets both directions and cannot be combined with "limits.ingress" or "limits.egress"`,
    );
  if (nictype === 'p2p') return;
  if (nictype !== 'bridged') {
    if (!dev.parent)
      throw new ValidationError(`${where}: "parent" (the host interface) is required for nictype=${nictype}`);
    return;
  }
  if (dev.network !== undefined) {
    if (dev.nictype !== undefined)
      throw new ValidationError(`${where}: "nictype" must not be set with "network" (the network decides it)`);
    if (dev.parent !== undefined && dev.parent !== dev.network)
      throw new ValidationError(
        `${where}: "parent" ("${dev.parent}") and "network" ("${dev.network}") name different networks`,
      );
  } else if (!dev.parent)
    throw new ValidationError(`${where}: "parent" (a host bridge or managed network) or "network" is required`);
  if (dev['ipv4.routes'] !== undefined && !dev['ipv4.address'])
    throw new ValidationError(`${where}: "ipv4.routes" needs a static "ipv4.address" to route through`);
  if (dev['ipv6.routes'] !== undefined && !dev['ipv6.address'])
    throw new ValidationError(`${where}: "ipv6.routes" needs a static "ipv6.address" to route through`);
}

/** What the API asks the host about nic parents (the agent passes the host's answers). */
export interface NicHostProbe {
  /** Every host interface by name. */
  interfaces(): Promise<{ name: string }[]>;
  /** Whether `parent` has SR-IOV virtual functions; `missing` names what it lacks. */
  sriov(parent: string): Promise<{ ok: boolean; missing?: string }>;
}

/**
 * The host checks of macvlan, physical and sriov nics: the parent interface exists, and sriov is
 * refused naming what the parent lacks (svcd does not allot virtual functions). A nic the container
 * already had unchanged (`current`) is not checked again: a physical parent is not on the host while
 * the container that holds it runs.
 */
export async function checkNicHost(
  devices: Record<string, Device>,
  host: NicHostProbe,
  current: Record<string, Device> = {},
): Promise<void> {
  let names: Set<string> | undefined;
  for (const [name, d] of Object.entries(devices)) {
    if (d.type !== 'nic') continue;
    const nictype = nicTypeOf(d);
    if (nictype === 'bridged' || nictype === 'p2p' || !d.parent) continue;
    const was = current[name];
    if (was && was.type === 'nic' && nicTypeOf(was) === nictype && was.parent === d.parent) continue;
    const where = `Device "${name}" (nic)`;
    names ??= new Set((await host.interfaces()).map((i) => i.name));
    if (!names.has(d.parent))
      throw new ValidationError(`${where}: invalid "parent": host interface "${d.parent}" does not exist`);
    if (nictype === 'sriov') {
      const r = await host.sriov(d.parent);
      if (!r.ok)
        throw new ValidationError(
          `${where}: nictype=sriov is not available on parent "${d.parent}": ${r.missing ?? 'no SR-IOV virtual functions'}`,
        );
      throw new ValidationError(
        `${where}: nictype=sriov is not supported by svcd yet (parent "${d.parent}" has virtual functions, but svcd does not allot them)`,
      );
    }
  }
}

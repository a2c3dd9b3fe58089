import type { NetworkFeature } from '../host/network/types.ts';
import { isAny, isBool, oneOf, validateConfig, type KeyTable, type ValueCheck } from './config-keys.ts';
import { ValidationError } from './errors.ts';
import { contains, parseCidr, parseIp, type Cidr, type Family } from '../util/ip-cidr.ts';
import type { ProbeResult } from '../host/storage/driver-catalog.ts';

/**
 * The config keys of a managed `bridge` network (LXD 5.0's bridge keys), validated without looking at
 * the host: what the host has (ovs-vsctl, gre, the fan patch) comes in as probe results.
 */

/** What validation asks of the host (the NetworkHost subset). */
export interface NetworkProbes {
  probe(feature: NetworkFeature): Promise<ProbeResult>;
}
export type ProbeResults = Partial<Record<NetworkFeature, ProbeResult>>;

const IFNAME = /^[A-Za-z0-9_.@-]{1,15}$/;
const isIfName: ValueCheck = (v) =>
  IFNAME.test(v) && v !== '.' && v !== '..' ? undefined : 'must be an interface name (at most 15 characters)';
const list = (v: string) => v.split(',').map((s) => s.trim());
const listOf =
  (check: ValueCheck): ValueCheck =>
  (v) => {
    for (const item of list(v)) {
      const err = check(item);
      if (err) return `"${item}" ${err}`;
    }
    return undefined;
  };
const isMac: ValueCheck = (v) => {
  if (!/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/.test(v)) return 'must be a MAC address';
  return (parseInt(v.slice(0, 2), 16) & 1) === 0
    ? undefined
    : 'must be a unicast MAC address (the first octet must be even)';
};
const range =
  (min: number, max: number): ValueCheck =>
  (v) =>
    /^\d+$/.test(v) && Number(v) >= min && Number(v) <= max ? undefined : `must be an integer from ${min} to ${max}`;
const DNS_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
const isDomain: ValueCheck = (v) =>
  v.length <= 253 && v.split('.').every((l) => DNS_LABEL.test(l))
    ? undefined
    : 'must be a DNS domain (labels of letters, digits and dashes)';
/** dnsmasq lease time: seconds, or a number with s/m/h/d/w, or `infinite`. */
const isExpiry: ValueCheck = (v) =>
  /^(\d+[smhdw]?|infinite)$/.test(v) ? undefined : 'must be a duration such as 1h, 30m, 3600 or infinite';
const isIp =
  (family?: Family): ValueCheck =>
  (v) => {
    const ip = parseIp(v);
    if (!ip || (family && ip.family !== family)) return `must be an IPv${family ?? '4 or IPv6'} address`;
    return undefined;
  };
const isCidr =
  (family: Family): ValueCheck =>
  (v) =>
    parseCidr(v)?.family === family
      ? undefined
      : `must be an IPv${family} CIDR such as ${family === 4 ? '10.0.3.0/24' : 'fd42::/64'}`;

/** `auto`, `none`, or the bridge's own address with the subnet's prefix (not its network or broadcast address). */
const isBridgeAddress =
  (family: Family): ValueCheck =>
  (v) => {
    if (v === 'auto' || v === 'none') return undefined;
    const c = parseCidr(v);
    const example = family === 4 ? '10.0.3.1/24' : 'fd42:1:2:3::1/64';
    if (!c || c.family !== family)
      return `must be auto, none or an IPv${family} address with its prefix, such as ${example}`;
    if (c.addr === c.network || (family === 4 && c.addr === c.last))
      return `"${v}" is the subnet's ${c.addr === c.network ? 'network' : 'broadcast'} address, not a usable host address (such as ${example})`;
    return undefined;
  };
const isRange =
  (family: Family): ValueCheck =>
  (v) => {
    const [a, b, ...rest] = v.split('-').map((s) => s.trim());
    const from = a ? parseIp(a) : undefined;
    const to = b ? parseIp(b) : undefined;
    if (rest.length || !from || !to || from.family !== family || to.family !== family)
      return `must be a range of IPv${family} addresses such as ${family === 4 ? '10.0.3.2-10.0.3.99' : 'fd42::10-fd42::ff'}`;
    return from.value <= to.value ? undefined : 'must start at or before where it ends';
  };

/** A key that needs a host feature: refused with what the host is missing; `then` checks the value when it is there. */
const needs =
  (probes: ProbeResults, feature: NetworkFeature, what: string, then: ValueCheck = isAny): ValueCheck =>
  (v) => {
    const p = probes[feature];
    if (!p) return `needs ${what}, which was not probed`;
    if (!p.ok) return `needs ${what}; this host is missing: ${p.missing.join(', ')}`;
    return then(v);
  };

/** Which features the config's keys need (probe them, then validate). */
export function featuresNeeded(config: Record<string, string>): NetworkFeature[] {
  const out = new Set<NetworkFeature>();
  for (const [k, v] of Object.entries(config)) {
    if (k === 'bridge.driver' && v === 'openvswitch') out.add('openvswitch');
    if ((k === 'bridge.mode' && v === 'fan') || k.startsWith('fan.')) out.add('fan');
    if (k.startsWith('maas.')) out.add('maas');
    if (/^tunnel\.[^.]+\.protocol$/.test(k) && (v === 'gre' || v === 'vxlan')) out.add(v);
  }
  return [...out];
}

/** The key table of a bridge network, given what the host has. */
export function bridgeKeyTable(probes: ProbeResults): KeyTable {
  const family = (f: Family) => {
    const p = `ipv${f}`;
    return {
      [`${p}.address`]: isBridgeAddress(f),
      [`${p}.dhcp`]: isBool,
      [`${p}.dhcp.expiry`]: isExpiry,
      [`${p}.dhcp.ranges`]: listOf(isRange(f)),
      [`${p}.firewall`]: isBool,
      [`${p}.nat`]: isBool,
      [`${p}.nat.order`]: oneOf('before', 'after'),
      [`${p}.nat.address`]: isIp(f),
      [`${p}.routes`]: listOf(isCidr(f)),
      [`${p}.routing`]: isBool,
    };
  };
  const fanPatch = 'the Ubuntu fan kernel patch';
  return {
    exact: {
      'bridge.driver': (v) =>
        v === 'openvswitch'
          ? needs(probes, 'openvswitch', 'Open vSwitch (ovs-vsctl)')(v)
          : oneOf('native', 'openvswitch')(v),
      'bridge.external_interfaces': listOf(isIfName),
      'bridge.hwaddr': isMac,
      'bridge.hwaddress': isMac,
      'bridge.mtu': range(68, 65535),
      'bridge.mode': (v) => (v === 'fan' ? needs(probes, 'fan', fanPatch)(v) : oneOf('standard', 'fan')(v)),
      'dns.domain': isDomain,
      'dns.mode': oneOf('managed', 'dynamic', 'none'),
      'dns.search': listOf(isDomain),
      'raw.dnsmasq': (v) => (v.includes('\0') ? 'must not contain NUL characters' : undefined),
      ...family(4),
      'ipv4.dhcp.gateway': isIp(4),
      ...family(6),
      'ipv6.dhcp.stateful': isBool,
      'fan.overlay_subnet': needs(probes, 'fan', fanPatch, isCidr(4)),
      'fan.underlay_subnet': needs(probes, 'fan', fanPatch, (v) => (v === 'auto' ? undefined : isCidr(4)(v))),
      'fan.type': needs(probes, 'fan', fanPatch, oneOf('vxlan', 'ipip')),
      'maas.subnet.ipv4': needs(probes, 'maas', 'a reachable MAAS server'),
      'maas.subnet.ipv6': needs(probes, 'maas', 'a reachable MAAS server'),
    },
    prefixes: { 'user.': isAny },
    readOnlyPrefixes: ['volatile.'],
  };
}

const TUNNEL_KEY = /^tunnel\.([^.]+)\.([^.]+)$/;
const TUNNEL_FIELDS: Record<string, ValueCheck> = {
  protocol: oneOf('gre', 'vxlan'),
  local: isIp(),
  remote: isIp(),
  group: isIp(),
  port: range(1, 65535),
  id: range(0, 16777215),
  interface: isIfName,
  ttl: range(1, 255),
};
const VXLAN_ONLY = ['group', 'port', 'id', 'interface'];

/** `tunnel.NAME.*`: each field checked, then each tunnel as a whole (protocol, endpoints, its interface name). */
function validateTunnels(network: string, config: Record<string, string>, probes: ProbeResults): void {
  const tunnels = new Map<string, Record<string, string>>();
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith('tunnel.')) continue;
    const m = TUNNEL_KEY.exec(key);
    const check = m && TUNNEL_FIELDS[m[2]!];
    if (!m || !check)
      throw new ValidationError(
        `Unknown network config key "${key}" (tunnel keys are tunnel.NAME.${Object.keys(TUNNEL_FIELDS).join('|')})`,
      );
    if (!/^[A-Za-z0-9_-]+$/.test(m[1]!))
      throw new ValidationError(`Invalid network config key "${key}": a tunnel name is letters, digits, "_" and "-"`);
    const err =
      check(value) ??
      (m[2] === 'protocol' ? needs(probes, value as NetworkFeature, `${value} tunnel support`)(value) : undefined);
    if (err) throw new ValidationError(`Invalid value for network config key "${key}": ${err}`);
    tunnels.set(m[1]!, { ...tunnels.get(m[1]!), [m[2]!]: value });
  }
  for (const [name, t] of tunnels) {
    const at = `tunnel.${name}`;
    if (!t.protocol)
      throw new ValidationError(
        `Invalid network config: "${at}.protocol" (gre or vxlan) is required for tunnel "${name}"`,
      );
    if (`${network}-${name}`.length > 15)
      throw new ValidationError(
        `Invalid network config key "${at}.protocol": the tunnel's interface "${network}-${name}" would be longer than 15 characters`,
      );
    if (t.protocol === 'gre') {
      if (!t.local || !t.remote)
        throw new ValidationError(`Invalid network config: a gre tunnel needs "${at}.local" and "${at}.remote"`);
      const extra = VXLAN_ONLY.find((f) => t[f] !== undefined);
      if (extra)
        throw new ValidationError(`Invalid network config key "${at}.${extra}": it applies to vxlan tunnels only`);
    } else if (!t.remote && !t.group)
      throw new ValidationError(`Invalid network config: a vxlan tunnel needs "${at}.remote" or "${at}.group"`);
    else if (t.remote && t.group)
      throw new ValidationError(`Invalid network config: "${at}.remote" and "${at}.group" exclude each other`);
    const families = ['local', 'remote', 'group'].filter((f) => t[f]).map((f) => [f, parseIp(t[f]!)!.family] as const);
    if (new Set(families.map(([, fam]) => fam)).size > 1)
      throw new ValidationError(
        `Invalid network config: the addresses of tunnel "${name}" (${families.map(([f]) => `${at}.${f}`).join(', ')}) must be of one family`,
      );
  }
}

/** The bridge's own CIDR on a family, when the config gives one (not auto or none). */
export function familyCidr(config: Record<string, string>, family: Family): Cidr | undefined {
  const v = config[`ipv${family}.address`];
  return v && v !== 'auto' && v !== 'none' ? parseCidr(v) : undefined;
}

/** Checks across keys of one family: DHCP settings inside the subnet, NAT source outside it. */
function crossCheckFamily(config: Record<string, string>, family: Family): void {
  const p = `ipv${family}`;
  const addr = config[`${p}.address`];
  const cidr = familyCidr(config, family);
  const needAddress = [`${p}.dhcp.ranges`, `${p}.dhcp.gateway`, `${p}.nat.address`].filter(
    (k) => config[k] !== undefined,
  );
  if (!cidr) {
    if (needAddress.length && addr !== 'auto')
      throw new ValidationError(
        `Invalid network config key "${needAddress[0]}": it needs an IPv${family} subnet ("${p}.address" is ${addr ?? 'not set'})`,
      );
    return;
  }
  for (const r of config[`${p}.dhcp.ranges`] ? list(config[`${p}.dhcp.ranges`]!) : []) {
    const [from, to] = r.split('-').map((s) => parseIp(s.trim())!);
    if (!contains(cidr, from!) || !contains(cidr, to!))
      throw new ValidationError(
        `Invalid value for network config key "${p}.dhcp.ranges": "${r}" is not inside the subnet of ${p}.address (${addr})`,
      );
  }
  const gw = config[`${p}.dhcp.gateway`];
  if (gw && !contains(cidr, parseIp(gw)!))
    throw new ValidationError(
      `Invalid value for network config key "${p}.dhcp.gateway": ${gw} is not inside the subnet of ${p}.address (${addr})`,
    );
  const natAddr = config[`${p}.nat.address`];
  if (natAddr && contains(cidr, parseIp(natAddr)!))
    throw new ValidationError(
      `Invalid value for network config key "${p}.nat.address": ${natAddr} is inside the bridge's own subnet (${addr}); it must be a host address traffic leaves from`,
    );
  if (family === 6 && cidr.prefix > 126)
    throw new ValidationError(
      `Invalid value for network config key "ipv6.address": a /${cidr.prefix} leaves no room for containers`,
    );
}

/** Validate a bridge network's config (pure): every key, each tunnel, and the checks across keys. Throws a ValidationError naming the key. */
export function validateNetworkConfig(network: string, config: Record<string, string>, probes: ProbeResults): void {
  const plain = Object.fromEntries(Object.entries(config).filter(([k]) => !k.startsWith('tunnel.')));
  validateConfig('network', plain, bridgeKeyTable(probes));
  validateTunnels(network, config, probes);
  crossCheckFamily(config, 4);
  crossCheckFamily(config, 6);
  if (
    config['bridge.hwaddr'] &&
    config['bridge.hwaddress'] &&
    config['bridge.hwaddr'].toLowerCase() !== config['bridge.hwaddress'].toLowerCase()
  )
    throw new ValidationError(
      'Invalid network config: "bridge.hwaddr" and "bridge.hwaddress" name different addresses',
    );
  const ext = config['bridge.external_interfaces'] ? list(config['bridge.external_interfaces']) : [];
  if (ext.includes(network))
    throw new ValidationError(
      `Invalid value for network config key "bridge.external_interfaces": the bridge "${network}" cannot be its own port`,
    );
}

/** Probe what the config needs, then validate it. */
export async function checkNetworkConfig(
  network: string,
  config: Record<string, string>,
  host: NetworkProbes,
): Promise<void> {
  const probes: ProbeResults = {};
  for (const f of featuresNeeded(config)) probes[f] = await host.probe(f);
  validateNetworkConfig(network, config, probes);
}

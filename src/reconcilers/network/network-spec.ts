/**
 * A managed network's desired config, as the host side needs it (host/network/types.ts NetworkSpec):
 * defaults filled in as LXD documents them, lists split, addresses parsed. Pure. The API validated the
 * config and resolved `auto`; a key left unset means what LXD's bridge driver makes of it (an unset
 * `ipv4.address` is no IPv4, as `none`).
 */
import { createHash } from 'node:crypto';
import { parseCidr, subnetText } from '../../util/ip-cidr.ts';
import type { NetworkFamilySpec, NetworkSpec, TunnelSpec } from '../../host/network/types.ts';
import { parseBool } from '../../util/parse-bool.ts';

type Config = Record<string, string>;

/** A boolean key with a default (`false`/`0`/`no`/`off` turn a default-on key off): the one boolean rule. */
const flag = parseBool;
const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A stable locally administered MAC for a bridge without `bridge.hwaddress` (00:16:3e, as LXD's), from the network's id. */
export function defaultBridgeHwaddr(networkId: string): string {
  const h = createHash('sha256').update(`network/${networkId}`).digest();
  return ['00', '16', '3e', ...[h[0]!, h[1]!, h[2]!].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** The subnet of `address/prefix`, in CIDR form (`10.1.2.0/24`, `fd42::/64`). */
export function subnetOf(address: string, prefix: number): string {
  const c = parseCidr(`${address}/${prefix}`);
  if (!c) throw new Error(`not an address: ${address}/${prefix}`);
  return subnetText(c);
}

function familyOf(config: Config, fam: 'ipv4' | 'ipv6'): NetworkFamilySpec | undefined {
  const cidr = config[`${fam}.address`];
  if (!cidr || cidr === 'none' || cidr === 'auto') return undefined;
  const [address, p] = cidr.split('/') as [string, string | undefined];
  const prefix = Number(p ?? (fam === 'ipv4' ? 24 : 64));
  const k = (s: string) => config[`${fam}.${s}`];
  const ranges = list(k('dhcp.ranges')).map((r) => {
    const [start, end] = r.split('-').map((s) => s.trim()) as [string, string | undefined];
    return { start, end: end ?? start };
  });
  return {
    address,
    prefix,
    subnet: subnetOf(address, prefix),
    dhcp: flag(k('dhcp'), true),
    ...(fam === 'ipv6' ? { dhcpStateful: flag(k('dhcp.stateful'), false) } : {}),
    dhcpRanges: ranges,
    dhcpExpiry: k('dhcp.expiry') || '1h',
    ...(fam === 'ipv4' && k('dhcp.gateway') ? { dhcpGateway: k('dhcp.gateway')! } : {}),
    nat: flag(k('nat'), false),
    natOrder: k('nat.order') === 'after' ? 'after' : 'before',
    ...(k('nat.address') ? { natAddress: k('nat.address')! } : {}),
    routing: flag(k('routing'), true),
    firewall: flag(k('firewall'), true),
    routes: list(k('routes')),
  };
}

function tunnelsOf(config: Config): TunnelSpec[] {
  const names = new Set<string>();
  for (const key of Object.keys(config)) {
    const m = /^tunnel\.([^.]+)\./.exec(key);
    if (m) names.add(m[1]!);
  }
  return [...names].sort().map((name) => {
    const k = (s: string) => config[`tunnel.${name}.${s}`];
    const num = (s: string) => (k(s) ? { [s === 'id' ? 'id' : s]: Number(k(s)) } : {});
    return {
      name,
      protocol: k('protocol') === 'gre' ? 'gre' : 'vxlan',
      ...(k('local') ? { local: k('local')! } : {}),
      ...(k('remote') ? { remote: k('remote')! } : {}),
      ...(k('group') ? { group: k('group')! } : {}),
      ...(k('interface') ? { interface: k('interface')! } : {}),
      ...num('port'),
      ...num('id'),
      ...num('ttl'),
    } as TunnelSpec;
  });
}

/** The host spec of a managed network (`dir`: its directory, host/layout.ts networkDirOf). */
export function networkSpecOf(row: { id: string; name: string; config: Config }, dir: string): NetworkSpec {
  const c = row.config;
  const ipv4 = familyOf(c, 'ipv4');
  const ipv6 = familyOf(c, 'ipv6');
  const mode = c['dns.mode'];
  return {
    name: row.name,
    dir,
    driver: c['bridge.driver'] === 'openvswitch' ? 'openvswitch' : 'native',
    mtu: c['bridge.mtu'] ? Number(c['bridge.mtu']) : 1500,
    hwaddr: (c['bridge.hwaddr'] || c['bridge.hwaddress'] || defaultBridgeHwaddr(row.id)).toLowerCase(),
    externalInterfaces: list(c['bridge.external_interfaces']),
    ...(ipv4 ? { ipv4 } : {}),
    ...(ipv6 ? { ipv6 } : {}),
    dns: { domain: c['dns.domain'] || 'svcd', mode: mode === 'dynamic' || mode === 'none' ? mode : 'managed' },
    rawDnsmasq: c['raw.dnsmasq'] ?? '',
    tunnels: tunnelsOf(c),
  };
}

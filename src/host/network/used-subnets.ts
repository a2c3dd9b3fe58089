/**
 * The subnets a host already uses, from its /proc/net files (pure): IPv4 routes (`route`), IPv6 routes
 * (`ipv6_route`) and the networks of its own addresses (fib_trie + route, if_inet6). Default routes,
 * link-local, multicast and single-host IPv6 routes are not subnets anyone could take. An IPv4
 * address without its connected route (its link is down) counts as its /32: /proc does not say its prefix.
 */
import {
  formatIpv6,
  ipv4AddressesByInterface,
  parseFibTrieLocal,
  parseIfInet6,
  parseIpv4Routes,
} from '../lxc/parse-proc-net.ts';

export interface ProcNetTexts {
  route: string;
  ipv6Route: string;
  fibTrie: string;
  ifInet6: string;
}

const maskOf = (prefix: number) => (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0);
const ipv4Number = (ip: string) => ip.split('.').reduce((n, o) => ((n << 8) | Number(o)) >>> 0, 0);

/** `a.b.c.d` with prefix → its network in CIDR form. */
export const ipv4Text = (n: number) => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
export const popcount = (n: number) => n.toString(2).replace(/0/g, '').length;
export const ipv4Network = (ip: string, prefix: number) =>
  `${ipv4Text((ipv4Number(ip) & maskOf(prefix)) >>> 0)}/${prefix}`;

/** 32 hex digits with prefix → the network in CIDR form (RFC 5952 text). */
export function ipv6NetworkOfHex(hex: string, prefix: number): string {
  const bits = [...hex.toLowerCase()].map((d) => parseInt(d, 16).toString(2).padStart(4, '0')).join('');
  const kept = bits.slice(0, prefix).padEnd(128, '0');
  const outHex = (kept.match(/.{4}/g) ?? []).map((b) => parseInt(b, 2).toString(16)).join('');
  return `${formatIpv6(outHex)}/${prefix}`;
}

/** RFC 5952 IPv6 text → 32 hex digits. */
export function ipv6Hex(address: string): string {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return groups
    .map((g) => g.padStart(4, '0'))
    .join('')
    .toLowerCase();
}

const ignoredV6 = (cidr: string) =>
  cidr === '::/0' || /^fe[89ab][0-9a-f]?:/.test(cidr) || cidr.startsWith('ff') || cidr.endsWith('/128');

/** /proc/net/ipv6_route: `dest prefixlen src srcprefixlen nexthop metric refcnt use flags dev` per line → destination CIDR and device. */
export function parseIpv6Routes(text: string): Array<{ iface: string; cidr: string }> {
  const out: Array<{ iface: string; cidr: string }> = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || !/^[0-9a-f]{32}$/i.test(f[0]!)) continue;
    out.push({ iface: f[9]!, cidr: ipv6NetworkOfHex(f[0]!, parseInt(f[1]!, 16)) });
  }
  return out;
}

/** Routes that are subnets someone uses (not the default, link-local, multicast or a single host). */
export const isSubnetRoute = (cidr: string) => !ignoredV6(cidr);

/** Every used subnet, CIDR form, deduplicated and sorted. */
export function usedSubnetsFrom(t: ProcNetTexts): string[] {
  const routes = parseIpv4Routes(t.route);
  const out = new Set<string>();
  for (const r of routes) if (r.mask !== 0) out.add(ipv4Network(ipv4Text(r.destination), popcount(r.mask)));
  const local = parseFibTrieLocal(t.fibTrie);
  const explained = ipv4AddressesByInterface(local, routes);
  for (const { address } of explained) out.add(ipv4Network(address.address, Number(address.netmask)));
  // an address whose connected route is gone (its link is down) still takes at least itself
  for (const a of local) if (!explained.some((e) => e.address.address === a)) out.add(`${a}/32`);
  for (const { cidr } of parseIpv6Routes(t.ipv6Route)) if (!ignoredV6(cidr)) out.add(cidr);
  for (const { address } of parseIfInet6(t.ifInet6)) {
    const cidr = ipv6NetworkOfHex(ipv6Hex(address.address), Number(address.netmask));
    if (address.scope === 'global' && !ignoredV6(cidr)) out.add(cidr);
  }
  return [...out].sort();
}

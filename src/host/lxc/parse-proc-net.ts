/** Pure parsers for a network namespace's /proc/<pid>/net files (dev, if_inet6, route, fib_trie). */

export interface NetworkCounters {
  bytesReceived: number;
  bytesSent: number;
  packetsReceived: number;
  packetsSent: number;
  errorsReceived: number;
  errorsSent: number;
  packetsDroppedInbound: number;
  packetsDroppedOutbound: number;
}

export interface NetworkAddress {
  family: 'inet' | 'inet6';
  address: string;
  /** Prefix length as a string, as LXD reports it (`24`, `64`). */
  netmask: string;
  scope: 'global' | 'link' | 'local';
}

/** /proc/net/dev: per interface, 8 receive then 8 transmit columns after `name:`. */
export function parseNetDev(text: string): Map<string, NetworkCounters> {
  const out = new Map<string, NetworkCounters>();
  for (const line of text.split('\n')) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const n = m[2]!.trim().split(/\s+/).map(Number);
    if (n.length < 16 || n.some((x) => !Number.isFinite(x))) continue;
    out.set(m[1]!, {
      bytesReceived: n[0]!,
      packetsReceived: n[1]!,
      errorsReceived: n[2]!,
      packetsDroppedInbound: n[3]!,
      bytesSent: n[8]!,
      packetsSent: n[9]!,
      errorsSent: n[10]!,
      packetsDroppedOutbound: n[11]!,
    });
  }
  return out;
}

/** 32 hex digits → RFC 5952 text (lower case, leading zeros dropped, the longest zero run as `::`). */
export function formatIpv6(hex: string): string {
  const groups = (hex.toLowerCase().match(/.{4}/g) ?? []).map((g) => g.replace(/^0+(?=.)/, ''));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  if (best.at < 0) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.len).join(':')}`;
}

/** /proc/net/if_inet6: `address ifindex prefixlen scope flags name` per line. */
export function parseIfInet6(text: string): Array<{ iface: string; address: NetworkAddress }> {
  const out: Array<{ iface: string; address: NetworkAddress }> = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 6 || !/^[0-9a-fA-F]{32}$/.test(f[0]!)) continue;
    const scopeBits = parseInt(f[3]!, 16);
    const scope = scopeBits === 0x20 ? 'link' : scopeBits === 0x10 ? 'local' : 'global';
    out.push({
      iface: f[5]!,
      address: { family: 'inet6', address: formatIpv6(f[0]!), netmask: String(parseInt(f[2]!, 16)), scope },
    });
  }
  return out;
}

export interface Ipv4Route {
  iface: string;
  /** Host-order 32-bit numbers. */
  destination: number;
  mask: number;
}

/** /proc/net/route holds addresses as little-endian hex; turn one into a host-order number. */
const le32 = (hex: string) => {
  const v = parseInt(hex, 16);
  return (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;
};

/** /proc/net/route rows (header skipped). */
export function parseIpv4Routes(text: string): Ipv4Route[] {
  const out: Ipv4Route[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || !/^[0-9A-Fa-f]{8}$/.test(f[1]!) || !/^[0-9A-Fa-f]{8}$/.test(f[7]!)) continue;
    out.push({ iface: f[0]!, destination: le32(f[1]!), mask: le32(f[7]!) });
  }
  return out;
}

const ipv4ToNumber = (ip: string) => ip.split('.').reduce((n, o) => ((n << 8) | Number(o)) >>> 0, 0);
const popcount = (n: number) => n.toString(2).replace(/0/g, '').length;

/** The local IPv4 addresses of the namespace: `/32 host LOCAL` leaves of /proc/net/fib_trie. */
export function parseFibTrieLocal(text: string): string[] {
  const out = new Set<string>();
  let leaf: string | undefined;
  for (const line of text.split('\n')) {
    const ip = /\|--\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (ip) {
      leaf = ip[1];
      continue;
    }
    if (leaf && /^\s*\/32 host LOCAL\s*$/.test(line)) out.add(leaf);
  }
  return [...out];
}

/**
 * IPv4 addresses per interface: each local address goes to the interface whose connected route holds it
 * (longest prefix; the default route is ignored), loopback addresses to `lo`. Addresses no route
 * explains (a /32 without a route) are left out: this is best effort without netlink.
 */
export function ipv4AddressesByInterface(
  localAddresses: readonly string[],
  routes: readonly Ipv4Route[],
): Array<{ iface: string; address: NetworkAddress }> {
  const out: Array<{ iface: string; address: NetworkAddress }> = [];
  for (const a of localAddresses) {
    const n = ipv4ToNumber(a);
    if (a.startsWith('127.')) {
      out.push({ iface: 'lo', address: { family: 'inet', address: a, netmask: '8', scope: 'local' } });
      continue;
    }
    const best = routes
      .filter((r) => r.mask !== 0 && (n & r.mask) >>> 0 === r.destination)
      .sort((x, y) => popcount(y.mask) - popcount(x.mask))[0];
    if (!best) continue;
    out.push({
      iface: best.iface,
      address: {
        family: 'inet',
        address: a,
        netmask: String(popcount(best.mask)),
        scope: a.startsWith('169.254.') ? 'link' : 'global',
      },
    });
  }
  return out;
}

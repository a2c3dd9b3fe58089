import { isIPv4, isIPv6 } from 'node:net';

/**
 * IPv4/IPv6 addresses and CIDRs as numbers (bigint), for network config validation: parse, compare,
 * test containment and overlap, format. Pure.
 */
export type Family = 4 | 6;

export interface Cidr {
  family: Family;
  /** The address as written (host part kept), as a number. */
  addr: bigint;
  prefix: number;
  /** The first address of the subnet. */
  network: bigint;
  /** The last address of the subnet (broadcast for IPv4). */
  last: bigint;
}

const bitsOf = (family: Family) => (family === 4 ? 32 : 128);

/** Parse an IP address to its family and number, or undefined when it is not one. */
export function parseIp(text: string): { family: Family; value: bigint } | undefined {
  if (isIPv4(text)) return { family: 4, value: text.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n) };
  if (!isIPv6(text) || text.includes('%')) return undefined;
  let s = text;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const n = parseIp(v4[1]!)!.value;
    s = `${s.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

/** Parse `address/prefix`, or undefined when it is not a CIDR. */
export function parseCidr(text: string): Cidr | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const ip = parseIp(m[1]!);
  const prefix = Number(m[2]);
  if (!ip || prefix > bitsOf(ip.family)) return undefined;
  const hostBits = BigInt(bitsOf(ip.family) - prefix);
  const network = (ip.value >> hostBits) << hostBits;
  return { family: ip.family, addr: ip.value, prefix, network, last: network + (1n << hostBits) - 1n };
}

/** Whether two subnets share an address. */
export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.network <= b.last && b.network <= a.last;
}

/** Whether an address (of the same family) lies in the subnet. */
export function contains(c: Cidr, ip: { family: Family; value: bigint }): boolean {
  return c.family === ip.family && ip.value >= c.network && ip.value <= c.last;
}

/** Format a number as an address of the family (IPv6 in its shortest form). */
export function formatIp(family: Family, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // The longest run of two or more zero groups becomes `::`.
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.len && j - i >= 2) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at < 0) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.len).join(':')}`;
}

/** The subnet in canonical CIDR form (`10.0.3.0/24`). */
export function subnetText(c: Cidr): string {
  return `${formatIp(c.family, c.network)}/${c.prefix}`;
}

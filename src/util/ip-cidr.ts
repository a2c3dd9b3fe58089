import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * IPv4/IPv6 addresses and CIDRs as numbers (bigint), for network config validation: parse, compare,
 * test containment and overlap, format. Pure; parsing and formatting are ipaddr.js's.
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

/** Parse an IP address to its family and number, or undefined when it is not one (ipaddr.js parses; no zones). */
export function parseIp(text: string): { family: Family; value: bigint } | undefined {
  if (!isIPv4(text) && !(isIPv6(text) && !text.includes('%'))) return undefined;
  const bytes = ipaddr.parse(text).toByteArray();
  return { family: bytes.length === 4 ? 4 : 6, value: bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n) };
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

/** Format a number as an address of the family (IPv6 in its shortest form, RFC 5952). */
export function formatIp(family: Family, value: bigint): string {
  const n = family === 4 ? 4 : 16;
  const bytes = Array.from({ length: n }, (_, i) => Number((value >> BigInt(8 * (n - 1 - i))) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

/** The subnet in canonical CIDR form (`10.0.3.0/24`). */
export function subnetText(c: Cidr): string {
  return `${formatIp(c.family, c.network)}/${c.prefix}`;
}

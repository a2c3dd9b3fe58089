/**
 * The DHCP ranges of a family without `dhcp.ranges` (pure): every host address of the subnet but the
 * gateway — for IPv4 without the network and broadcast addresses, for IPv6 without the subnet-router
 * anycast address (`::`).
 */
import type { NetworkFamilySpec } from './types.ts';
import { ipv6Hex } from './used-subnets.ts';
import { formatIpv6 } from '../lxc/parse-proc-net.ts';

const toBig = (ip: string): bigint =>
  ip.includes(':') ? BigInt(`0x${ipv6Hex(ip)}`) : ip.split('.').reduce((n, o) => (n << 8n) | BigInt(o), 0n);
const fromBig = (n: bigint, v6: boolean): string =>
  v6 ? formatIpv6(n.toString(16).padStart(32, '0')) : [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');

export function defaultDhcpRanges(f: Pick<NetworkFamilySpec, 'address' | 'prefix'>): { start: string; end: string }[] {
  const v6 = f.address.includes(':');
  const bits = v6 ? 128n : 32n;
  const size = 1n << (bits - BigInt(f.prefix));
  const gw = toBig(f.address);
  const net = gw & ~(size - 1n) & ((1n << bits) - 1n);
  const first = net + 1n;
  const last = net + size - (v6 ? 1n : 2n);
  const out: Array<[bigint, bigint]> = [];
  if (gw > first) out.push([first, gw - 1n < last ? gw - 1n : last]);
  if (gw < last) out.push([gw + 1n > first ? gw + 1n : first, last]);
  return out.filter(([s, e]) => s <= e).map(([s, e]) => ({ start: fromBig(s, v6), end: fromBig(e, v6) }));
}

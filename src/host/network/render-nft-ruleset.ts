/**
 * The whole `inet svcd` nftables table for the managed networks (pure): one script for `nft -f` that
 * replaces the table atomically (declare it, delete it, define it), or only removes it when no network
 * has a rule (none at all, or only bridges without addresses: a plain L2 bridge has nothing to accept
 * or masquerade, as with LXD). Per family with `firewall`: input accepts DHCP, DNS and ICMP from the bridge, output accepts
 * DHCP and DNS replies to it, forward accepts traffic into and out of it. Per family with `nat`:
 * masquerade (or snat to `natAddress`) from the subnet to anywhere else.
 *
 * NAT order: svcd's NAT chains sit next to the standard `srcnat` priority (100): `before` at 99 —
 * evaluated before other tables' source NAT, so svcd's mapping wins for its subnets; `after` at 101 —
 * other rules (the admin's, another tool's) decide first and svcd only maps what they left alone.
 */
import type { NetworkFamilySpec, NetworkSpec } from './types.ts';

export const NFT_TABLE = 'svcd';
const CLEAR = `table inet ${NFT_TABLE} {}\ndelete table inet ${NFT_TABLE}\n`;

type Family = { spec: NetworkFamilySpec; proto: 'ipv4' | 'ipv6'; ip: 'ip' | 'ip6' };

const families = (n: NetworkSpec): Family[] => [
  ...(n.ipv4 ? [{ spec: n.ipv4, proto: 'ipv4' as const, ip: 'ip' as const }] : []),
  ...(n.ipv6 ? [{ spec: n.ipv6, proto: 'ipv6' as const, ip: 'ip6' as const }] : []),
];

const q = (name: string) => `"${name}"`;

export function renderNftRuleset(specs: readonly NetworkSpec[]): string {
  if (specs.length === 0) return CLEAR;
  const input: string[] = [];
  const output: string[] = [];
  const forward: string[] = [];
  const nat = { before: [] as string[], after: [] as string[] };
  for (const n of [...specs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    for (const f of families(n)) {
      const on = `meta nfproto ${f.proto}`;
      if (f.spec.firewall) {
        const dhcp = f.proto === 'ipv4' ? { server: 67, client: 68 } : { server: 547, client: 546 };
        const icmp = f.proto === 'ipv4' ? 'icmp' : 'ipv6-icmp';
        input.push(
          `iifname ${q(n.name)} ${on} udp dport { 53, ${dhcp.server} } accept`,
          `iifname ${q(n.name)} ${on} tcp dport 53 accept`,
          `iifname ${q(n.name)} ${on} meta l4proto ${icmp} accept`,
        );
        output.push(
          `oifname ${q(n.name)} ${on} udp sport { 53, ${dhcp.server} } accept`,
          `oifname ${q(n.name)} ${on} tcp sport 53 accept`,
          `oifname ${q(n.name)} ${on} meta l4proto ${icmp} accept`,
        );
        forward.push(`iifname ${q(n.name)} ${on} accept`, `oifname ${q(n.name)} ${on} accept`);
      }
      if (f.spec.nat) {
        const action = f.spec.natAddress
          ? `snat ${f.proto === 'ipv4' ? 'ip' : 'ip6'} to ${f.spec.natAddress}`
          : 'masquerade';
        nat[f.spec.natOrder].push(`${f.ip} saddr ${f.spec.subnet} ${f.ip} daddr != ${f.spec.subnet} ${action}`);
      }
    }
  }
  const chain = (name: string, head: string, rules: string[]) =>
    rules.length ? [`  chain ${name} {`, `    ${head}`, ...rules.map((r) => `    ${r}`), '  }'] : [];
  const body = [
    ...chain('input', 'type filter hook input priority filter; policy accept;', input),
    ...chain('output', 'type filter hook output priority filter; policy accept;', output),
    ...chain('forward', 'type filter hook forward priority filter; policy accept;', forward),
    ...chain('postrouting_before', 'type nat hook postrouting priority srcnat - 1; policy accept;', nat.before),
    ...chain('postrouting_after', 'type nat hook postrouting priority srcnat + 1; policy accept;', nat.after),
  ];
  // Networks with no rule (bridges without addresses, firewall and NAT off): no table, not an empty one.
  if (body.length === 0) return CLEAR;
  return `${CLEAR}table inet ${NFT_TABLE} {\n${body.map((l) => `${l}\n`).join('')}}\n`;
}

/**
 * `security.mac_filtering`: svcd's `bridge svcd` nftables table (owned by the container nics; the
 * `inet svcd` table is the networks'). A base chain on the bridge's prerouting hook dispatches by input
 * interface (a verdict map) to one chain per filtered nic, which drops frames from the nic's host veth
 * whose source MAC is not the nic's, and, with a static address, ARP and IP spoofing. Each nic is added
 * or removed in one nft transaction without touching the others. Pure renderers and one runner.
 */
import { runCommand } from '../exec.ts';

export const NIC_FILTER_TABLE = 'bridge svcd';

export interface FilteredNic {
  hostName: string;
  hwaddr: string;
  ipv4?: string | undefined;
  ipv6?: string | undefined;
}

/** The nic's chain: `nic-<host name>` (a character nft names cannot hold, such as `@`, becomes `_`). */
export const nicFilterChain = (hostName: string) => `nic-${hostName.replace(/[^A-Za-z0-9_.-]/g, '_')}`;

/** The table, the dispatch map and the base chain (idempotent). */
const base = [
  `add table ${NIC_FILTER_TABLE}`,
  `add map ${NIC_FILTER_TABLE} nics { type ifname : verdict ; }`,
  `add chain ${NIC_FILTER_TABLE} prerouting { type filter hook prerouting priority -200 ; policy accept ; }`,
  `flush chain ${NIC_FILTER_TABLE} prerouting`,
  `add rule ${NIC_FILTER_TABLE} prerouting iifname vmap @nics`,
];

/** The nft script that sets one nic's filter (replacing what it had). */
export function renderNicFilter(nic: FilteredNic): string {
  const chain = `${NIC_FILTER_TABLE} ${nicFilterChain(nic.hostName)}`;
  const mac = nic.hwaddr.toLowerCase();
  const lines = [
    ...base,
    `add chain ${chain}`,
    `flush chain ${chain}`,
    `add rule ${chain} ether saddr != ${mac} drop`,
    `add rule ${chain} ether type arp arp saddr ether != ${mac} drop`,
  ];
  if (nic.ipv4) {
    lines.push(`add rule ${chain} ether type arp arp saddr ip != ${nic.ipv4} drop`);
    // 0.0.0.0: a DHCP client before it has its address.
    lines.push(`add rule ${chain} ether type ip ip saddr != { 0.0.0.0, ${nic.ipv4} } drop`);
  }
  if (nic.ipv6) lines.push(`add rule ${chain} ether type ip6 ip6 saddr != { ::, fe80::/10, ${nic.ipv6} } drop`);
  lines.push(`add element ${NIC_FILTER_TABLE} nics { "${nic.hostName}" : jump ${nicFilterChain(nic.hostName)} }`);
  return `${lines.join('\n')}\n`;
}

/** The nft script that removes one nic's filter; nothing there is success (it is added first in the same transaction). */
export function renderNicFilterRemoval(hostName: string): string {
  const chain = `${NIC_FILTER_TABLE} ${nicFilterChain(hostName)}`;
  const element = `${NIC_FILTER_TABLE} nics { "${hostName}" : jump ${nicFilterChain(hostName)} }`;
  return [
    `add table ${NIC_FILTER_TABLE}`,
    `add map ${NIC_FILTER_TABLE} nics { type ifname : verdict ; }`,
    `add chain ${chain}`,
    `add element ${element}`,
    `delete element ${NIC_FILTER_TABLE} nics { "${hostName}" }`,
    `delete chain ${chain}`,
    '',
  ].join('\n');
}

/** Set (nic) or remove (undefined) the filter of the nic whose host side is `hostName`. */
export async function applyNicFilter(
  hostName: string,
  nic: FilteredNic | undefined,
  signal?: AbortSignal,
): Promise<void> {
  await runCommand('nft', ['-f', '-'], {
    input: nic ? renderNicFilter(nic) : renderNicFilterRemoval(hostName),
    timeoutMs: 30_000,
    ...(signal ? { signal } : {}),
  });
}

/**
 * Proxy devices in nat mode: DNAT rules in svcd's own table `inet svcd_proxy`, three base chains per
 * container (prerouting and output dnat, postrouting masquerade) replaced atomically by one `nft -f -`
 * (declared, flushed, filled; or flushed and deleted when it has none). For a loopback listen address
 * (127.0.0.0/8), as LXD does: route_localnet on the bridge (a 127.x source may leave through it) and a
 * masquerade of 127.0.0.0/8 to the connect address, so replies come back. A hairpin masquerade lets the
 * container reach itself through the listen address.
 */
import { writeFile } from 'node:fs/promises';
import type { NatRule } from './types.ts';

export const PROXY_NFT_TABLE = 'svcd_proxy';

/** Chain names: the container id without what nft does not take in a name (its dashes). */
const chainsOf = (containerId: string) => {
  const id = containerId.replace(/[^A-Za-z0-9_]/g, '');
  return {
  pre: { name: `pre_${id}`, head: 'type nat hook prerouting priority -100; policy accept;' },
  out: { name: `out_${id}`, head: 'type nat hook output priority -100; policy accept;' },
  post: { name: `post_${id}`, head: 'type nat hook postrouting priority 100; policy accept;' },
  };
};

const isLoopback4 = (r: NatRule) => r.family === 4 && r.listenAddress.startsWith('127.');
const ipOf = (r: NatRule) => (r.family === 4 ? 'ip' : 'ip6');
const hostOf = (r: NatRule, a: string) => (r.family === 6 ? `[${a}]` : a);

/** listen port → connect port, one to one (a single connect port takes every listen port). */
export function portPairs(r: NatRule): [number, number][] {
  return r.listenPorts.map((p, i) => [p, r.connectPorts.length === 1 ? r.connectPorts[0]! : r.connectPorts[i]!]);
}

/** The `nft -f` script that sets a container's proxy chains to exactly `rules` (none: its chains go). Pure. */
export function renderProxyNat(containerId: string, rules: readonly NatRule[]): string {
  const chains = chainsOf(containerId);
  const t = `inet ${PROXY_NFT_TABLE}`;
  const lines = [`table ${t} {}`];
  for (const c of Object.values(chains)) lines.push(`add chain ${t} ${c.name} { ${c.head} }`, `flush chain ${t} ${c.name}`);
  if (rules.length === 0) {
    for (const c of Object.values(chains)) lines.push(`delete chain ${t} ${c.name}`);
    return `${lines.join('\n')}\n`;
  }
  const add = (chain: string, rule: string) => lines.push(`add rule ${t} ${chain} ${rule}`);
  for (const r of rules) {
    const ip = ipOf(r);
    for (const [lp, cp] of portPairs(r)) {
      const dnat = `${ip} daddr ${r.listenAddress} ${r.protocol} dport ${lp} dnat ${ip} to ${hostOf(r, r.connectAddress)}:${cp}`;
      add(chains.pre.name, dnat);
      add(chains.out.name, dnat);
      add(chains.post.name, `${ip} saddr ${r.connectAddress} ${ip} daddr ${r.connectAddress} ${r.protocol} dport ${cp} masquerade`);
      if (isLoopback4(r)) add(chains.post.name, `oifname "${r.bridge}" ip saddr 127.0.0.0/8 ip daddr ${r.connectAddress} ${r.protocol} dport ${cp} masquerade`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The sysctls the rules need: route_localnet on the bridge of each loopback rule. */
export function proxyNatSysctls(rules: readonly NatRule[]): string[] {
  return [...new Set(rules.filter(isLoopback4).map((r) => `net/ipv4/conf/${r.bridge}/route_localnet`))];
}

export interface ProxyNatDeps {
  /** `nft` with these args and stdin (the host's runner: src/host/exec.ts). */
  runNft(args: readonly string[], input: string, signal?: AbortSignal): Promise<unknown>;
  procRoot?: string;
}

/** `nft -j list table inet svcd_proxy` output → whether the table holds no chain. */
export function tableIsEmpty(json: string): boolean {
  const items = (JSON.parse(json || '{}') as { nftables?: Record<string, unknown>[] }).nftables ?? [];
  return !items.some((i) => 'chain' in i);
}

/**
 * applyNat of the ProxyAdapter: the sysctls first (so the first packet already routes), then the rules.
 * When a container's rules go and no container has any left, the table goes too (read, then deleted,
 * one apply at a time in this process, so no other container's chains can slip in between).
 */
export function createProxyNat(deps: ProxyNatDeps) {
  const procRoot = deps.procRoot ?? '/proc';
  let last: Promise<unknown> = Promise.resolve();
  async function apply(containerId: string, rules: readonly NatRule[], signal?: AbortSignal): Promise<void> {
    for (const path of proxyNatSysctls(rules)) await writeFile(`${procRoot}/sys/${path}`, '1\n');
    await deps.runNft(['-f', '-'], renderProxyNat(containerId, rules), signal);
    if (rules.length > 0) return;
    const listed = await deps.runNft(['-j', 'list', 'table', 'inet', PROXY_NFT_TABLE], '', signal);
    if (tableIsEmpty(typeof listed === 'string' ? listed : '')) await deps.runNft(['delete', 'table', 'inet', PROXY_NFT_TABLE], '', signal);
  }
  return function applyNat(containerId: string, rules: readonly NatRule[], signal?: AbortSignal): Promise<void> {
    const next = last.then(() => apply(containerId, rules, signal));
    last = next.catch(() => undefined);
    return next;
  };
}

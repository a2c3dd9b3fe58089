/**
 * Proxy devices in nat mode: DNAT rules in svcd's own table `inet svcd_proxy`, three base chains per
 * container (prerouting and output dnat, postrouting masquerade) replaced atomically by one `nft -f -`
 * (declared, flushed, filled; or flushed and deleted when it has none). For a loopback listen address
 * (127.0.0.0/8), as LXD does: route_localnet on the bridge (a 127.x source may leave through it) and a
 * masquerade of 127.0.0.0/8 to the connect address, so replies come back. A hairpin masquerade lets the
 * container reach itself through the listen address. route_localnet goes back to 0 once no rule needs it
 * on that bridge, when svcd was the one to set it (a marker file per bridge under `markerDir`).
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
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
  for (const c of Object.values(chains))
    lines.push(`add chain ${t} ${c.name} { ${c.head} }`, `flush chain ${t} ${c.name}`);
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
      add(
        chains.post.name,
        `${ip} saddr ${r.connectAddress} ${ip} daddr ${r.connectAddress} ${r.protocol} dport ${cp} masquerade`,
      );
      if (isLoopback4(r))
        add(
          chains.post.name,
          `oifname "${r.bridge}" ip saddr 127.0.0.0/8 ip daddr ${r.connectAddress} ${r.protocol} dport ${cp} masquerade`,
        );
    }
  }
  return `${lines.join('\n')}\n`;
}

export interface ProxyNatDeps {
  /** `nft` with these args and stdin (the host's runner: src/host/exec.ts). */
  runNft(args: readonly string[], input: string, signal?: AbortSignal): Promise<unknown>;
  /** Where svcd notes the bridges it turned route_localnet on for (one empty file each). */
  markerDir: string;
  procRoot?: string;
}

type NftItem = Record<string, unknown>;
type NftExpr = {
  match?: { left?: { meta?: { key?: string }; payload?: { protocol?: string; field?: string } }; right?: unknown };
};
const itemsOf = (json: string) => (JSON.parse(json || '{}') as { nftables?: NftItem[] }).nftables ?? [];

/** `nft -j list table inet svcd_proxy` output → whether the table holds no chain. */
export function tableIsEmpty(json: string): boolean {
  return !itemsOf(json).some((i) => 'chain' in i);
}

/** The same listing → the bridges some rule masquerades 127.0.0.0/8 out of (they need route_localnet). */
export function loopbackBridges(json: string): Set<string> {
  const out = new Set<string>();
  for (const item of itemsOf(json)) {
    const expr = ((item.rule as { expr?: NftExpr[] } | undefined)?.expr ?? [])
      .map((e) => e.match)
      .filter((m) => m !== undefined);
    const oif = expr.find((m) => m.left?.meta?.key === 'oifname')?.right;
    const saddr = expr.find((m) => m.left?.payload?.protocol === 'ip' && m.left.payload.field === 'saddr')?.right as
      | { prefix?: { addr?: string; len?: number } }
      | undefined;
    if (typeof oif === 'string' && saddr?.prefix?.addr === '127.0.0.0' && saddr.prefix.len === 8) out.add(oif);
  }
  return out;
}

/**
 * applyNat of the ProxyAdapter: the sysctls first (so the first packet already routes), then the rules.
 * Then the table is read back: a route_localnet svcd set that no rule needs any more goes back to 0, and
 * when no container has rules left the table goes too. One apply at a time in this process, so no other
 * container's chains can slip in between the read and the delete.
 */
export function createProxyNat(deps: ProxyNatDeps) {
  const procRoot = deps.procRoot ?? '/proc';
  const sysctl = (bridge: string) => `${procRoot}/sys/net/ipv4/conf/${bridge}/route_localnet`;
  let last: Promise<unknown> = Promise.resolve();
  async function apply(containerId: string, rules: readonly NatRule[], signal?: AbortSignal): Promise<void> {
    for (const bridge of new Set(rules.filter(isLoopback4).map((r) => r.bridge))) {
      if ((await readFile(sysctl(bridge), 'utf8')).trim() === '1') continue;
      await mkdir(deps.markerDir, { recursive: true });
      await writeFile(path.join(deps.markerDir, bridge), '');
      await writeFile(sysctl(bridge), '1\n');
    }
    await deps.runNft(['-f', '-'], renderProxyNat(containerId, rules), signal);
    const listed = await deps.runNft(['-j', 'list', 'table', 'inet', PROXY_NFT_TABLE], '', signal);
    const json = typeof listed === 'string' ? listed : '';
    const needed = loopbackBridges(json);
    for (const bridge of await readdir(deps.markerDir).catch(() => [] as string[])) {
      if (needed.has(bridge)) continue;
      await writeFile(sysctl(bridge), '0\n').catch(() => undefined); // (a bridge deleted since: nothing to put back)
      await rm(path.join(deps.markerDir, bridge), { force: true });
    }
    if (rules.length === 0 && tableIsEmpty(json))
      await deps.runNft(['delete', 'table', 'inet', PROXY_NFT_TABLE], '', signal);
  }
  return function applyNat(containerId: string, rules: readonly NatRule[], signal?: AbortSignal): Promise<void> {
    const next = last.then(() => apply(containerId, rules, signal));
    last = next.catch(() => undefined);
    return next;
  };
}

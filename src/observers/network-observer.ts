import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { cachedLocalRead } from '../desired/cached-reads.ts';
import { NETWORK_KIND } from '../desired/networks.ts';
import { networkRuntime, networks } from '../desired/schema/index.ts';
import type { NetworkAdapter } from '../reconcilers/adapters.ts';
import { specOfRow } from '../reconcilers/network/reconcile.ts';
import type { PollObserver } from './types.ts';

/**
 * Managed networks' health on the host, sampled without spawning (sysfs, the dnsmasq pid file and
 * /proc): a bridge deleted or a dnsmasq killed behind svcd's back triggers the network's reconciler at
 * once, and again every `repeatMs` while it stays broken (a repair that did not hold). What each look found is
 * this member's network_runtime row, written when it changed: in a cluster the API shows a network Created once
 * every member's host has it.
 */
export function createNetworkObserver(deps: {
  db: Db;
  stateDir: string;
  node?: string;
  network: Pick<NetworkAdapter, 'health'>;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
  repeatMs?: number;
  now?: () => number;
}): PollObserver & { forget(id: string): void } {
  const now = deps.now ?? Date.now;
  const repeatMs = deps.repeatMs ?? 5_000;
  /** Network id → its problem when last reported, and when (absent: healthy at the last look). */
  const reported = new Map<string, { what: string; at: number }>();
  /** Network id → the problem last written to its runtime row ('' when ready). */
  const written = new Map<string, string>();
  /** This member's row of a network, when what its host shows changed (a network removed meanwhile has none). */
  async function record(id: string, problem: string | undefined): Promise<void> {
    if (!deps.node || written.get(id) === (problem ?? '')) return;
    const values = { ready: problem === undefined, problem: problem ?? '', observedAt: new Date() };
    await deps.db
      .insert(networkRuntime)
      .values({ node: deps.node, networkId: id, ...values })
      .onConflictDoUpdate({ target: [networkRuntime.node, networkRuntime.networkId], set: values })
      .then(
        () => written.set(id, problem ?? ''),
        () => undefined,
      );
  }
  return {
    name: 'networks',
    kind: 'poll',
    // After a reboot, the startup tier sets up what a first look would find missing (and queue once more).
    afterStartup: true,
    intervalMs: deps.intervalMs ?? 1_000,
    forget: (id) => void reported.delete(id),
    async sample() {
      // Read again only after a write of networks (svcd's own count of writes, or on a shared PostgreSQL the
      // notified commits while they are heard: migration 0010): no query per tick.
      const rows = await cachedLocalRead(deps.db, 'observed networks', ['networks'], () =>
        deps.db
          .select({
            id: networks.id,
            name: networks.name,
            config: networks.config,
            memberConfig: networks.memberConfig,
          })
          .from(networks)
          .where(and(isNull(networks.deletingAt), eq(networks.pending, false))),
      );
      const seen = new Set<string>();
      for (const row of rows) {
        seen.add(row.id);
        const problem = await deps.network
          .health(specOfRow(deps.stateDir, row, deps.node))
          .catch((e: unknown) => (e as Error).message);
        await record(row.id, problem);
        if (problem === undefined) {
          reported.delete(row.id);
          continue;
        }
        // A new problem at once (even if the last one was never seen repaired); the same one again after repeatMs.
        const what = `network ${row.name}: ${problem}`;
        const last = reported.get(row.id);
        if (last && last.what === what && now() - last.at < repeatMs) continue;
        reported.set(row.id, { what, at: now() });
        deps.report(NETWORK_KIND, row.id, what);
      }
      for (const id of reported.keys()) if (!seen.has(id)) reported.delete(id);
      for (const id of written.keys()) if (!seen.has(id)) written.delete(id);
    },
  };
}

import { isNotNull } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { readDataVersion } from '../desired/data-versions.ts';
import { NETWORK_KIND } from '../desired/networks.ts';
import { networks, storagePools } from '../desired/schema/index.ts';
import { POOL_KIND } from '../desired/storage-pools.ts';

/** How often a clustered member looks for pools and networks another member wrote. */
const WATCH_MS = 2_000;

/**
 * Pools and networks are defined once for every member, and each member makes them on its own host: a
 * change written through another member is queued here within WATCH_MS (not at the next resync). A tick
 * reads nothing while the tables' data version is unchanged (readDataVersion: notified commits, no query).
 */
export function createSharedKindsWatch(deps: {
  db: Db;
  clustered: () => boolean;
  enqueue(kind: string, key: string, reason: string): void;
  log: { warn(o: object, m?: string): void };
  intervalMs?: number;
}) {
  let lastVersion: string | undefined;
  const seen = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function tick() {
    if (!deps.clustered()) return;
    const version = await readDataVersion(deps.db, ['storage_pools', 'networks']);
    if (version === lastVersion) return;
    lastVersion = version;
    const [pools, nets] = await Promise.all([
      deps.db
        .select({ key: storagePools.name, g: storagePools.generation, d: storagePools.deletingAt })
        .from(storagePools),
      deps.db.select({ key: networks.id, g: networks.generation, d: networks.deletingAt }).from(networks),
    ]);
    for (const [kind, rows] of [
      [POOL_KIND, pools],
      [NETWORK_KIND, nets],
    ] as const)
      for (const r of rows) {
        const id = `${kind}\u0000${r.key}`;
        const sig = `${r.g} ${r.d ? 'deleting' : ''}`;
        if (seen.get(id) === sig) continue;
        seen.set(id, sig);
        deps.enqueue(kind, r.key, 'written through another member');
      }
  }
  const loop = () => {
    if (stopped) return;
    tick()
      .catch((err: unknown) => deps.log.warn({ err }, 'cannot read the pools and networks of the cluster'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, deps.intervalMs ?? WATCH_MS).unref();
      });
  };
  return {
    start: loop,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    /**
     * A member was removed: deletions that waited for its part (desired/member-status.ts) can finish now, at
     * this member's next reconcile of each, not at the next resync.
     */
    async requeueDeleting(): Promise<void> {
      const [pools, nets] = await Promise.all([
        deps.db.select({ key: storagePools.name }).from(storagePools).where(isNotNull(storagePools.deletingAt)),
        deps.db.select({ key: networks.id }).from(networks).where(isNotNull(networks.deletingAt)),
      ]);
      for (const r of pools) deps.enqueue(POOL_KIND, r.key, 'a member was removed');
      for (const r of nets) deps.enqueue(NETWORK_KIND, r.key, 'a member was removed');
    },
  };
}

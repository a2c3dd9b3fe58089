import type { Db } from '../db/types.ts';
import { poolRuntime } from '../desired/schema/index.ts';
import { listPools, POOL_KIND } from '../desired/storage-pools.ts';
import type { StorageDriver } from '../host/storage/types.ts';
import type { PollObserver } from './types.ts';
import { poolSpecOf } from '../host/layout.ts';

/**
 * Pool usage and health, sampled without spawning processes (mountinfo + statfs) and written to
 * pool_runtime, which GET .../resources reads. A pool that stops being ready (unmounted behind
 * svcd's back, backing file gone) triggers its reconciler once per change.
 */
export function createPoolObserver(deps: {
  db: Db;
  node: string;
  stateDir: string;
  driverFor: (name: string) => StorageDriver;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
}): PollObserver {
  const lastReady = new Map<string, boolean>();
  return {
    name: 'storage-pools',
    kind: 'poll',
    // After a reboot, the startup tier sets up what a first look would find missing (and queue once more).
    afterStartup: true,
    intervalMs: deps.intervalMs ?? 10_000,
    async sample() {
      for (const row of await listPools(deps.db)) {
        if (row.deletingAt || row.pending) continue;
        const spec = poolSpecOf(row, deps.stateDir, deps.node);
        const driver = deps.driverFor(row.driver);
        const health = await driver
          .poolHealth(spec)
          .catch((e: unknown) => ({ ready: false, problem: (e as Error).message }));
        const usage = health.ready ? await driver.poolUsage(spec).catch(() => undefined) : undefined;
        const values = {
          ready: health.ready,
          problem: health.ready ? '' : (health.problem ?? 'not ready'),
          spaceUsed: usage?.space.used ?? 0,
          spaceTotal: usage?.space.total ?? 0,
          inodesUsed: usage?.inodes.used ?? 0,
          inodesTotal: usage?.inodes.total ?? 0,
          observedAt: new Date(),
        };
        await deps.db
          .insert(poolRuntime)
          .values({ node: deps.node, pool: row.name, ...values })
          .onConflictDoUpdate({ target: [poolRuntime.node, poolRuntime.pool], set: values });
        if (lastReady.get(row.name) !== false && !health.ready)
          deps.report(POOL_KIND, row.name, `pool not ready: ${values.problem}`);
        lastReady.set(row.name, health.ready);
      }
    },
  };
}

import { and, eq } from 'drizzle-orm';
import type { Db, Tx } from '../../db/types.ts';
import { poolRuntime, storagePools } from '../../desired/schema/index.ts';
import { deletePoolRow, listPools, POOL_KIND } from '../../desired/storage-pools.ts';
import { volumesOnPool } from '../../desired/storage-volumes.ts';
import { poolSpecOf } from '../../host/layout.ts';
import { parseSize } from '../../util/size.ts';
import type { Reconciler } from '../runtime/index.ts';
import type { StorageAdapter } from '../adapters.ts';
import { readFacts, writeFacts } from '../status-settler.ts';

/**
 * Converge one storage pool: created, attached and mounted while desired; unmounted, detached and
 * removed once marked for deletion (then its row goes). Idempotent from any partial state.
 */
export function createPoolReconciler(deps: {
  db: Db;
  node: string;
  stateDir: string;
  storage: StorageAdapter;
  /** Called after a pool changed on the host, so observers refresh its health and usage now. */
  onHostChange?: (pool: string) => Promise<void>;
}): Reconciler {
  const { db, stateDir, storage } = deps;
  return {
    kind: POOL_KIND,
    // Before what uses them: at start, containers and volumes are converged only once these are on the host.
    startupTier: 0,
    async listKeys() {
      return (await listPools(db)).filter((p) => !p.pending).map((p) => p.name);
    },
    async reconcile(name, ctx) {
      const [row] = await db.select().from(storagePools).where(eq(storagePools.name, name));
      // Defined on some members only (desired/pool-pending.ts): on no host yet.
      if (!row || row.pending) return {};
      const spec = poolSpecOf(row, stateDir, deps.node);
      const driver = storage.driverFor(row.driver);
      if (row.deletingAt) {
        const left = await volumesOnPool(db, name);
        if (left.length) throw new Error(`waiting for ${left.length} volume(s) on pool "${name}" to be removed`);
        await driver.removePool(spec, ctx.signal);
        // Its rows go with its status row and its operations' settlement, in one transaction (status-settler.ts).
        const removeRows = (tx: Tx) =>
          Promise.all([
            deletePoolRow(tx, name),
            tx.delete(poolRuntime).where(and(eq(poolRuntime.pool, name), eq(poolRuntime.node, deps.node))),
          ]);
        return { observedGeneration: row.generation, gone: true, removeRows };
      }
      await driver.ensurePool(spec, ctx.signal);
      // Mount options changed since they were last applied: remount in place.
      const facts = (await readFacts(db, POOL_KIND, name)) as { mountOptions?: string };
      const wanted = row.config['btrfs.mount_options'] ?? '';
      if (driver.remountPool && facts.mountOptions !== undefined && facts.mountOptions !== wanted)
        await driver.remountPool(spec, ctx.signal);
      if (facts.mountOptions !== wanted) await writeFacts(db, POOL_KIND, name, { ...facts, mountOptions: wanted });
      if (driver.resizePool && row.config.size && !row.config['volatile.initial_source']) {
        const usage = await driver.poolUsage(spec);
        // Only grow when the configured size is clearly above what the filesystem has.
        if (parseSize(row.config.size) > usage.space.total * 1.05) await driver.resizePool(spec, ctx.signal);
      }
      await deps.onHostChange?.(name);
      return { observedGeneration: row.generation };
    },
  };
}

import { and, eq } from 'drizzle-orm';
import type { Db, DbOrTx, Tx } from '../../db/types.ts';
import { poolRuntime, storagePools } from '../../desired/schema/index.ts';
import { claimMemberStatus, noOtherMemberHas, readMemberFacts, writeMemberFacts } from '../../desired/member-status.ts';
import { deletePoolRow, listPools, lockPoolRow, POOL_KIND } from '../../desired/storage-pools.ts';
import { volumesOnPool } from '../../desired/storage-volumes.ts';
import { poolSpecOf } from '../../host/layout.ts';
import { parseSize } from '../../util/size.ts';
import type { Reconciler } from '../runtime/index.ts';
import type { StorageAdapter } from '../adapters.ts';

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
  const { db, stateDir, storage, node } = deps;
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
        // This member's part is gone: its runtime row goes with its status row and the settlement, in one
        // transaction (status-settler.ts); the pool's row with the last member's part.
        // Every statement is sent at once (the settler leaves them in flight), the row's lock first.
        const removeRows = (tx: Tx) =>
          Promise.all([
            lockPoolRow(tx, name, 'update'),
            deletePoolRow(tx, name, noOtherMemberHas(node, POOL_KIND, name)),
            tx.delete(poolRuntime).where(and(eq(poolRuntime.pool, name), eq(poolRuntime.node, node))),
          ]);
        return { observedGeneration: row.generation, gone: true, removeRows };
      }
      const wanted = row.config['btrfs.mount_options'] ?? '';
      let facts = (await readMemberFacts(db, node, POOL_KIND, name)) as { mountOptions?: string } | undefined;
      // Recorded before the host is touched: a deletion then knows this member has its part to remove
      // (unless the pool is being deleted already).
      if (!facts) {
        facts = { mountOptions: wanted };
        const live = async (tx: DbOrTx) => {
          const r = await lockPoolRow(tx, name, 'share');
          return !!r && !r.deletingAt && !r.pending;
        };
        if (!(await claimMemberStatus(db, node, POOL_KIND, name, { ...facts }, live))) return {};
      }
      await driver.ensurePool(spec, ctx.signal);
      // Mount options changed since they were last applied (on this member's host): remount in place.
      if (driver.remountPool && facts.mountOptions !== undefined && facts.mountOptions !== wanted)
        await driver.remountPool(spec, ctx.signal);
      if (facts.mountOptions !== wanted)
        await writeMemberFacts(db, node, POOL_KIND, name, { ...facts, mountOptions: wanted });
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

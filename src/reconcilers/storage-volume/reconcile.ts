import { eq } from 'drizzle-orm';
import type { Db, Tx } from '../../db/types.ts';
import {
  storagePools,
  storageVolumes,
  type StoragePoolRow,
  type StorageVolumeRow,
} from '../../desired/schema/index.ts';
import {
  deleteSnapshotRow,
  deleteVolumeRow,
  listAllSnapshots,
  readVolumeById,
  VOLUME_KIND,
} from '../../desired/storage-volumes.ts';
import type { PoolSpec, SnapshotRef, StorageDriver, VolumeRef } from '../../host/storage/types.ts';
import { isStorageUnsupportedError } from '../../host/storage/errors.ts';
import { TerminalError, type ReconcileResult, type Reconciler } from '../runtime/index.ts';
import type { StorageAdapter } from '../adapters.ts';
import { readFacts, writeFacts } from '../status-settler.ts';
import { poolSpecOf } from '../../host/layout.ts';

interface VolumeFacts {
  /** The pool where the volume's data lives now (differs from desired while a move is pending). */
  pool?: string;
  /** Restore requests applied so far. */
  restoredSeq?: number;
}

const refOf = (v: StorageVolumeRow): VolumeRef => ({ id: v.id, type: v.type as VolumeRef['type'] });

/**
 * Converge one volume: present on its desired pool (created empty, copied from its source, or
 * moved from where it was), its quota applied, its snapshots made or removed, a requested restore
 * done; or, once marked for deletion, removed with its snapshots and then its rows.
 */
export function createVolumeReconciler(deps: {
  db: Db;
  stateDir: string;
  node: string;
  storage: StorageAdapter;
}): Reconciler {
  const { db, stateDir, storage } = deps;

  async function readyPool(name: string): Promise<{ row: StoragePoolRow; spec: PoolSpec; driver: StorageDriver }> {
    const [row] = await db.select().from(storagePools).where(eq(storagePools.name, name));
    if (!row) throw new TerminalError(`storage pool "${name}" does not exist`);
    const spec = poolSpecOf(row, stateDir, deps.node);
    const driver = storage.driverFor(row.driver);
    const health = await driver.poolHealth(spec);
    if (!health.ready) throw new Error(`storage pool "${name}" is not ready: ${health.problem ?? 'not mounted'}`);
    return { row, spec, driver };
  }

  return {
    kind: VOLUME_KIND,
    async listKeys() {
      // Container and image volumes belong to the container reconciler.
      return (
        await db.select({ id: storageVolumes.id }).from(storageVolumes).where(eq(storageVolumes.type, 'custom'))
      ).map((r) => r.id);
    },
    async reconcile(id, ctx) {
      try {
        return await converge(id, ctx.signal);
      } catch (e) {
        // What the host cannot do will not work on retry.
        if (isStorageUnsupportedError(e)) throw new TerminalError((e as Error).message);
        throw e;
      }
    },
  };

  async function converge(id: string, signal: AbortSignal): Promise<ReconcileResult> {
    const ctx = { signal };
    {
      const vol = await readVolumeById(db, id);
      if (vol?.type !== 'custom') return {};
      const facts = (await readFacts(db, VOLUME_KIND, id)) as VolumeFacts;
      const ref = refOf(vol);
      const snapshots = await listAllSnapshots(db, id);
      const snapRef = (sid: string): SnapshotRef => ({ volume: ref, id: sid });
      const here = facts.pool ?? vol.pool;

      if (vol.deletingAt) {
        for (const poolName of new Set([here, vol.pool])) {
          const p = await readyPool(poolName);
          for (const s of snapshots) await p.driver.removeSnapshot(p.spec, snapRef(s.id), ctx.signal);
          await p.driver.removeVolume(p.spec, ref, ctx.signal);
        }
        // Its row goes with its status row and its operations' settlement, in one transaction (status-settler.ts).
        return { observedGeneration: vol.generation, gone: true, removeRows: (tx: Tx) => deleteVolumeRow(tx, id) };
      }

      const target = await readyPool(vol.pool);
      if (here !== vol.pool) {
        const from = await readyPool(here);
        if (await from.driver.volumeExists(from.spec, ref)) {
          // A move: rebuild each snapshot (oldest first) from a fresh copy of it, then copy the live
          // data, then drop the old copy. Re-running after a crash redoes the copies from the source.
          const bw = { bwlimit: target.row.config['rsync.bwlimit'] };
          for (const s of snapshots.filter((x) => !x.deletingAt)) {
            if (await exists(target, snapRef(s.id))) continue;
            await target.driver.removeVolume(target.spec, ref, ctx.signal);
            await target.driver.copyVolume(
              { pool: from.spec, driver: from.driver, vol: ref, snapshot: snapRef(s.id) },
              { pool: target.spec, vol: ref },
              bw,
              ctx.signal,
            );
            await target.driver.ensureSnapshot(target.spec, snapRef(s.id), ctx.signal);
          }
          await target.driver.removeVolume(target.spec, ref, ctx.signal);
          await target.driver.copyVolume(
            { pool: from.spec, driver: from.driver, vol: ref },
            { pool: target.spec, vol: ref },
            bw,
            ctx.signal,
          );
          for (const s of snapshots) await from.driver.removeSnapshot(from.spec, snapRef(s.id), ctx.signal);
          await from.driver.removeVolume(from.spec, ref, ctx.signal);
        }
        facts.pool = vol.pool;
        await writeFacts(db, VOLUME_KIND, id, { ...facts });
      } else if (!(await target.driver.volumeExists(target.spec, ref))) {
        if (vol.source && !facts.pool) {
          const src = await readVolumeById(db, vol.source.volumeId);
          if (!src || src.deletingAt) throw new TerminalError('the source volume of this copy no longer exists');
          const srcFacts = (await readFacts(db, VOLUME_KIND, src.id)) as VolumeFacts;
          const from = await readyPool(srcFacts.pool ?? src.pool);
          const bw = { bwlimit: target.row.config['rsync.bwlimit'] };
          // Snapshots first (oldest first), each rebuilt from a fresh copy of the source's, then the live data.
          for (const m of vol.source.snapshots ?? []) {
            if (await exists(target, snapRef(m.to))) continue;
            await target.driver.removeVolume(target.spec, ref, ctx.signal);
            await target.driver.copyVolume(
              { pool: from.spec, driver: from.driver, vol: refOf(src), snapshot: { volume: refOf(src), id: m.from } },
              { pool: target.spec, vol: ref },
              bw,
              ctx.signal,
            );
            await target.driver.ensureSnapshot(target.spec, snapRef(m.to), ctx.signal);
          }
          if (vol.source.snapshots?.length) await target.driver.removeVolume(target.spec, ref, ctx.signal);
          const snapshot = vol.source.snapshotId ? { volume: refOf(src), id: vol.source.snapshotId } : undefined;
          await target.driver.copyVolume(
            { pool: from.spec, driver: from.driver, vol: refOf(src), snapshot },
            { pool: target.spec, vol: ref },
            bw,
            ctx.signal,
          );
        }
      }
      await target.driver.ensureVolume(target.spec, ref, { size: vol.config.size }, ctx.signal);
      if (facts.pool !== vol.pool) {
        facts.pool = vol.pool;
        await writeFacts(db, VOLUME_KIND, id, { ...facts });
      }

      for (const s of snapshots) {
        if (s.deletingAt) {
          await target.driver.removeSnapshot(target.spec, snapRef(s.id), ctx.signal);
          await deleteSnapshotRow(db, s.id);
        } else await target.driver.ensureSnapshot(target.spec, snapRef(s.id), ctx.signal);
      }

      if (vol.restore && vol.restore.seq > (facts.restoredSeq ?? 0)) {
        if (!snapshots.some((s) => s.id === vol.restore!.snapshotId && !s.deletingAt))
          throw new TerminalError('the snapshot to restore no longer exists');
        await target.driver.restoreSnapshot(target.spec, snapRef(vol.restore.snapshotId), ctx.signal);
        facts.restoredSeq = vol.restore.seq;
        await writeFacts(db, VOLUME_KIND, id, { ...facts });
      }
      return { observedGeneration: vol.generation };
    }
  }
}

const exists = (p: { spec: PoolSpec; driver: StorageDriver }, snap: SnapshotRef) =>
  p.driver.snapshotExists(p.spec, snap);

import { cachedContainerSnapshots } from '../../desired/cached-reads.ts';
import { allContainerSnapshots, deleteContainerSnapshotRow } from '../../desired/container-snapshots.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import type { VolumeRef } from '../../host/storage/types.ts';
import { TerminalError } from '../runtime/index.ts';
import type { PoolHandle, RootfsDeps } from './ensure-rootfs.ts';

/**
 * The root volume's snapshots match the snapshot rows: made when new (read-only btrfs snapshot,
 * dir copy), removed (with their rows) when marked for deletion.
 */
export async function ensureSnapshots(
  deps: RootfsDeps,
  c: ContainerRow,
  pool: PoolHandle,
  ref: VolumeRef,
  signal: AbortSignal,
): Promise<void> {
  for (const s of await cachedContainerSnapshots(deps.db, c.id)) {
    const snap = { volume: ref, id: s.id };
    if (s.deletingAt) {
      await pool.driver.removeSnapshot(pool.spec, snap, signal);
      await deleteContainerSnapshotRow(deps.db, s.id);
    } else {
      await pool.driver.ensureSnapshot(pool.spec, snap, signal);
    }
  }
}

/** Replace the root volume's content with a snapshot's (the caller has stopped the container). */
export async function restoreSnapshot(
  deps: RootfsDeps,
  c: ContainerRow,
  pool: PoolHandle,
  ref: VolumeRef,
  snapshotId: string,
  signal: AbortSignal,
): Promise<void> {
  const snaps = await allContainerSnapshots(deps.db, c.id);
  if (!snaps.some((s) => s.id === snapshotId && !s.deletingAt))
    throw new TerminalError('the snapshot to restore no longer exists');
  await pool.driver.restoreSnapshot(pool.spec, { volume: ref, id: snapshotId }, signal);
}

/** Remove every snapshot of a container being deleted. */
export async function removeSnapshots(
  deps: RootfsDeps,
  c: ContainerRow,
  pool: PoolHandle,
  ref: VolumeRef,
  signal: AbortSignal,
): Promise<void> {
  for (const s of await cachedContainerSnapshots(deps.db, c.id))
    await pool.driver.removeSnapshot(pool.spec, { volume: ref, id: s.id }, signal);
}

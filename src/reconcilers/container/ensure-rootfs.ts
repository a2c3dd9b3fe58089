import path from 'node:path';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/types.ts';
import { readContainerById } from '../../desired/containers.ts';
import { allContainerSnapshots } from '../../desired/container-snapshots.ts';
import {
  IMAGE_VOLUME_KIND,
  deleteVolumeRow,
  ensureImageVolumeRow,
  recordContainerVolume,
} from '../../desired/storage-volumes.ts';
import { cachedPools } from '../../desired/cached-reads.ts';
import { storageVolumes, type ContainerRow, type StoragePoolRow } from '../../desired/schema/index.ts';
import type { ImageFiles } from '../../host/images/inspect-image.ts';
import type { PoolSpec, StorageDriver, VolumeRef } from '../../host/storage/types.ts';
import type { RootfsFilesAdapter, StorageAdapter, UnpackAdapter } from '../adapters.ts';
import type { RootfsState } from './rootfs-state.ts';
import { isTerminalError, TerminalError, terminalMessageOf } from '../runtime/index.ts';
import { clearStatus, readFacts, writeFacts, type FactsRecord } from '../status-settler.ts';
import { poolSpecOf } from '../../host/layout.ts';

export interface PoolHandle {
  row: StoragePoolRow;
  spec: PoolSpec;
  driver: StorageDriver;
}

export interface RootfsDeps {
  db: Db;
  stateDir: string;
  /** This member (its own pool sources, given at join). */
  node: string;
  storage: StorageAdapter;
  unpack: UnpackAdapter;
  /** The root volumes' files: metadata, templates, files in the rootfs, a backup's tarball. */
  rootfsFiles: RootfsFilesAdapter;
  imageFiles: (fingerprint: string) => Promise<ImageFiles>;
  /** Per agent: pool health checks, image volume locks (agent.ts creates it). */
  rootfsState: RootfsState;
}

export async function readyPool(deps: RootfsDeps, name: string): Promise<PoolHandle> {
  const row = (await cachedPools(deps.db)).find((p) => p.name === name);
  if (!row) throw new TerminalError(`storage pool "${name}" does not exist`);
  if (row.pending) throw new TerminalError(`storage pool "${name}" is pending: defined on some members only`);
  const spec = poolSpecOf(row, deps.stateDir, deps.node);
  const driver = deps.storage.driverFor(row.driver);
  const health = await deps.rootfsState.recentHealth(JSON.stringify(spec), () => driver.poolHealth(spec));
  if (!health.ready) throw new Error(`storage pool "${name}" is not ready: ${health.problem ?? 'not mounted'}`);
  return { row, spec, driver };
}

/** The root disk's pool of an expanded device map. */
export function rootPoolOf(devices: Record<string, Record<string, string>>): string {
  const root = Object.values(devices).find((d) => d.type === 'disk' && d.path === '/' && d.pool);
  if (!root) throw new TerminalError('the container has no root disk device');
  return root.pool!;
}

/**
 * The image unpacked once per pool into an image volume (a row of type `image` named by the
 * fingerprint); containers are clones of it (btrfs snapshot, dir copy). `ready` is recorded only
 * after a complete unpack, so a crash mid-unpack is redone from scratch. Serialized per (pool, image)
 * inside svcd, which alone manages this host's storage: a create never copies a volume another one is
 * still unpacking (or re-unpacking).
 */
async function ensureImageVolume(
  deps: RootfsDeps,
  pool: PoolHandle,
  fingerprint: string,
  signal: AbortSignal,
): Promise<VolumeRef> {
  const key = `${pool.row.name}\0${fingerprint}`;
  const known = deps.rootfsState.readyImageVolumes.get(key);
  if (known && (await pool.driver.volumeExists(pool.spec, known))) return known;
  return deps.rootfsState.imageVolumeLocks.run(key, async () => {
    const ref: VolumeRef = { id: await ensureImageVolumeRow(deps.db, pool.row.name, fingerprint), type: 'image' };
    const facts = await readFacts(deps.db, IMAGE_VOLUME_KIND, ref.id);
    if (facts.ready !== true || !(await pool.driver.volumeExists(pool.spec, ref))) {
      deps.rootfsState.readyImageVolumes.delete(key);
      const files = await deps.imageFiles(fingerprint);
      await pool.driver.removeVolume(pool.spec, ref, signal);
      await pool.driver.ensureVolume(pool.spec, ref, {}, signal);
      try {
        await deps.unpack.unpackImage(files, pool.driver.volumePath(pool.spec, ref), signal);
      } catch (e) {
        // Nothing half-unpacked stays on the pool (nor its row): the next try starts from scratch.
        await pool.driver.removeVolume(pool.spec, ref).catch(() => undefined);
        await deleteVolumeRow(deps.db, ref.id).catch(() => undefined);
        await clearStatus(deps.db, IMAGE_VOLUME_KIND, ref.id).catch(() => undefined);
        // A damaged image file: no retry unpacks it (tar's own words say what is wrong).
        if (isTerminalError(e))
          throw new TerminalError(`Failed to unpack image ${fingerprint}: ${terminalMessageOf(e)}`, { cause: e });
        throw e;
      }
      await writeFacts(deps.db, IMAGE_VOLUME_KIND, ref.id, { ready: true });
    }
    deps.rootfsState.readyImageVolumes.set(key, ref);
    return ref;
  });
}

/**
 * Remove an image volume (with a dir pool's spare copy) and its row, unless `keep()` says its image is
 * back: under the same lock as ensureImageVolume, so no create unpacks or takes it meanwhile.
 */
export async function removeImageVolume(
  deps: RootfsDeps,
  pool: PoolHandle,
  vol: { id: string; name: string },
  keep: () => Promise<boolean>,
  signal: AbortSignal,
): Promise<boolean> {
  const key = `${pool.row.name}\0${vol.name}`;
  return deps.rootfsState.imageVolumeLocks.run(key, async () => {
    if (await keep()) return false;
    deps.rootfsState.readyImageVolumes.delete(key);
    await pool.driver.removeVolume(pool.spec, { id: vol.id, type: 'image' }, signal);
    await deleteVolumeRow(deps.db, vol.id);
    await clearStatus(deps.db, IMAGE_VOLUME_KIND, vol.id);
    return true;
  });
}

/** What ensureRootfs records in the container's reconcile facts. */
export interface RootfsFacts {
  /** A copy's snapshots are all made (its live data follows). */
  snapshotsCopied?: boolean;
  /** The volume row last written: `<pool>/<project>/<name>` (rewritten only when that changes). */
  volumeRow?: string;
}

export interface RootfsHooks {
  /** The container's reconcile facts, shared with the caller (one copy, so no write drops another's key). */
  record: FactsRecord<RootfsFacts>;
  /** Called once the new volume is about to be filled (from an image, or a copy). */
  beforeFill?: (trigger: 'create' | 'copy') => Promise<void>;
}

/**
 * The container's root volume exists on its pool (cloned from its image, copied from another
 * container, or empty for source `none`), and a `container` volume row lists it.
 */
export async function ensureRootfs(
  deps: RootfsDeps,
  c: ContainerRow,
  poolName: string,
  signal: AbortSignal,
  hooks: RootfsHooks,
): Promise<{ pool: PoolHandle; ref: VolumeRef; rootfs: string }> {
  const pool = await readyPool(deps, poolName);
  const ref: VolumeRef = { id: c.id, type: 'container' };
  // An imported backup: the tarball's presence means it is not unpacked yet. Its snapshots first (oldest
  // first; one already made is kept after a crash), then the container's own data from scratch.
  if (c.source.type === 'backup' && (await deps.rootfsFiles.exists(c.source.file))) {
    const file = c.source.file;
    const unpackInto = async (part: { snapshot?: string }) => {
      await pool.driver.removeVolume(pool.spec, ref, signal);
      await pool.driver.ensureVolume(pool.spec, ref, {}, signal);
      await deps.unpack.unpackBackup(file, pool.driver.volumePath(pool.spec, ref), signal, part);
    };
    for (const s of c.source.snapshots ?? []) {
      const mine = { volume: ref, id: s.id };
      if (await pool.driver.snapshotExists(pool.spec, mine)) continue;
      await unpackInto({ snapshot: s.name });
      await pool.driver.ensureSnapshot(pool.spec, mine, signal);
    }
    await unpackInto({});
    await deps.rootfsFiles.remove(file);
  } else {
    if (c.source.type === 'copy' && c.source.snapshots?.length && !hooks.record.facts.snapshotsCopied) {
      await copySnapshotsAlong(deps, c.source.containerId, c.source.snapshots, pool, ref, signal);
      hooks.record.facts.snapshotsCopied = true;
      await hooks.record.save();
    }
    if (!(await pool.driver.volumeExists(pool.spec, ref))) await fillVolume();
  }
  /** The new volume's content, once: from the image, the container copied, or empty. */
  async function fillVolume() {
    if (c.source.type === 'image') {
      const img = await ensureImageVolume(deps, pool, c.source.fingerprint, signal);
      // Before the volume exists: a crash from here on still leaves the image's create templates to apply.
      await hooks.beforeFill?.('create');
      await pool.driver.copyVolume(
        { pool: pool.spec, driver: pool.driver, vol: img },
        { pool: pool.spec, vol: ref },
        {},
        signal,
      );
    } else if (c.source.type === 'copy') {
      const src = await readContainerById(deps.db, c.source.containerId);
      if (!src) throw new TerminalError('the container to copy from no longer exists');
      const [srcVol] = await deps.db.select().from(storageVolumes).where(eq(storageVolumes.id, src.id));
      if (!srcVol) throw new TerminalError(`container "${src.name}" has no root volume yet`);
      const from = await readyPool(deps, srcVol.pool);
      const srcRef: VolumeRef = { id: src.id, type: 'container' };
      let snapshot: { volume: VolumeRef; id: string } | undefined;
      const wanted = c.source.snapshot;
      if (wanted) {
        const s = (await allContainerSnapshots(deps.db, src.id)).find((x) => x.name === wanted && !x.deletingAt);
        if (!s) throw new TerminalError(`snapshot "${wanted}" of container "${src.name}" no longer exists`);
        snapshot = { volume: srcRef, id: s.id };
      }
      await hooks.beforeFill?.('copy');
      await pool.driver.copyVolume(
        { pool: from.spec, driver: from.driver, vol: srcRef, snapshot },
        { pool: pool.spec, vol: ref },
        {},
        signal,
      );
    } else if (c.source.type === 'migration') {
      // The data came over the wire before the row was written: nothing here can make it again.
      throw new TerminalError('the root volume received from the other server is missing');
    } else {
      // Source none (or a backup whose volume was lost): an empty root filesystem.
      await pool.driver.ensureVolume(pool.spec, ref, {}, signal);
      // No image: empty metadata (LXD shows architecture and creation date), no templates.
      if (c.source.type === 'none') {
        const volumeDir = pool.driver.volumePath(pool.spec, ref);
        await deps.rootfsFiles.writeMetadata(volumeDir, {
          architecture: c.architecture,
          creation_date: Math.floor(c.createdAt.getTime() / 1000),
          expiry_date: 0,
          properties: {},
          templates: {},
        });
      }
    }
  }
  const rootfs = path.join(pool.driver.volumePath(pool.spec, ref), 'rootfs');
  await deps.rootfsFiles.ensureDir(rootfs, 0o755);
  const volumeRow = `${poolName}/${c.project}/${c.name}`;
  if (hooks.record.facts.volumeRow !== volumeRow) {
    await recordContainerVolume(deps.db, { id: c.id, pool: poolName, project: c.project, name: c.name });
    hooks.record.facts.volumeRow = volumeRow;
    hooks.record.note();
  }
  return { pool, ref, rootfs };
}

/**
 * A copy's snapshots, before its live data: each source snapshot (oldest first) is copied into the new
 * volume and snapshotted under its new id, as volume copies do; then the volume is dropped for the live
 * copy. The caller records when it is done (a fact); a crash midway redoes only the snapshots not made yet.
 */
async function copySnapshotsAlong(
  deps: RootfsDeps,
  sourceId: string,
  snapshots: { from: string; to: string }[],
  pool: PoolHandle,
  ref: VolumeRef,
  signal: AbortSignal,
): Promise<void> {
  const src = await readContainerById(deps.db, sourceId);
  if (!src) throw new TerminalError('the container to copy from no longer exists');
  const [srcVol] = await deps.db.select().from(storageVolumes).where(eq(storageVolumes.id, src.id));
  if (!srcVol) throw new TerminalError(`container "${src.name}" has no root volume yet`);
  const from = await readyPool(deps, srcVol.pool);
  const srcRef: VolumeRef = { id: src.id, type: 'container' };
  const live = new Set((await allContainerSnapshots(deps.db, src.id)).filter((s) => !s.deletingAt).map((s) => s.id));
  for (const m of snapshots) {
    const mine = { volume: ref, id: m.to };
    if (await pool.driver.snapshotExists(pool.spec, mine)) continue;
    if (!live.has(m.from))
      throw new TerminalError(`a snapshot of container "${src.name}" was deleted while it was being copied`);
    await pool.driver.removeVolume(pool.spec, ref, signal);
    await pool.driver.copyVolume(
      { pool: from.spec, driver: from.driver, vol: srcRef, snapshot: { volume: srcRef, id: m.from } },
      { pool: pool.spec, vol: ref },
      {},
      signal,
    );
    await pool.driver.ensureSnapshot(pool.spec, mine, signal);
  }
  await pool.driver.removeVolume(pool.spec, ref, signal);
}

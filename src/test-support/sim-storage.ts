/**
 * A storage driver that keeps its pools, volumes and snapshots in memory (the StorageDriver contract of
 * src/host/storage/types.ts), mirrored as plain directories under a temp dir so what is written into a
 * volume (templates, metadata, a rootfs) and paths looked at on disk behave as on a dir pool. It enforces
 * the real drivers' preconditions: a volume needs its pool, a copy needs its source, a snapshot needs its
 * volume, a restore needs its snapshot; removing what is absent is success.
 */
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { PoolSpec, SnapshotRef, StorageDriver, VolumeRef } from '../host/storage/types.ts';
import { createSimCalls, type SimCalls } from './sim-calls.ts';

export interface SimStorage extends StorageDriver, Pick<SimCalls, 'calls' | 'failOnce'> {
  /** The storage adapter the reconcilers take: this driver for every name. */
  driverFor(name: string): StorageDriver;
  /** Pools present (created and mounted). */
  readonly pools: Set<string>;
  /** Volumes by `<pool>/<id>`, with the size applied. */
  readonly volumes: Map<string, { size?: string | undefined }>;
  /** Snapshots by `<pool>/<volume id>/<snapshot id>`. */
  readonly snapshots: Set<string>;
  /** Behind the reconcilers' back (drift): a pool unmounted, a volume lost. */
  unmountPool(name: string): void;
  loseVolume(pool: string, vol: VolumeRef): Promise<void>;
}

const volKey = (pool: PoolSpec | string, vol: VolumeRef) => `${typeof pool === 'string' ? pool : pool.name}/${vol.id}`;
const snapKey = (pool: PoolSpec, s: SnapshotRef) => `${pool.name}/${s.volume.id}/${s.id}`;

export function createSimStorage(deps: { root: string }): SimStorage {
  const sim = createSimCalls('sim storage');
  const pools = new Set<string>();
  const volumes = new Map<string, { size?: string | undefined }>();
  const snapshots = new Set<string>();
  const poolPath = (pool: PoolSpec) => path.join(deps.root, pool.name);
  const volumePath = (pool: PoolSpec, vol: VolumeRef) => path.join(poolPath(pool), vol.type, vol.id);
  const snapshotPath = (pool: PoolSpec, s: SnapshotRef) => path.join(poolPath(pool), 'snapshots', s.volume.id, s.id);
  const needPool = (pool: PoolSpec) => {
    if (!pools.has(pool.name)) throw new Error(`pool ${pool.name} is not mounted`);
  };
  const needVolume = (pool: PoolSpec, vol: VolumeRef) => {
    needPool(pool);
    if (!volumes.has(volKey(pool, vol))) throw new Error(`volume ${vol.id} does not exist on pool ${pool.name}`);
  };

  const driver: SimStorage = {
    name: 'dir',
    calls: sim.calls,
    failOnce: sim.failOnce,
    pools,
    volumes,
    snapshots,
    driverFor: () => driver,
    poolPath,
    async ensurePool(pool) {
      sim.enter('ensurePool');
      await mkdir(poolPath(pool), { recursive: true });
      pools.add(pool.name);
    },
    async removePool(pool) {
      sim.enter('removePool');
      if ([...volumes.keys()].some((k) => k.startsWith(`${pool.name}/`)))
        throw new Error(`pool ${pool.name} still has volumes`);
      pools.delete(pool.name);
      await rm(poolPath(pool), { recursive: true, force: true });
    },
    async poolHealth(pool) {
      sim.enter('poolHealth');
      return pools.has(pool.name) ? { ready: true } : { ready: false, problem: 'not mounted' };
    },
    async poolUsage(pool) {
      needPool(pool);
      return { space: { used: 0, total: 1 << 30 }, inodes: { used: 0, total: 1 << 20 } };
    },
    volumePath,
    async ensureVolume(pool, vol, opts) {
      sim.enter('ensureVolume');
      needPool(pool);
      await mkdir(volumePath(pool, vol), { recursive: true });
      volumes.set(volKey(pool, vol), { size: opts.size || undefined });
    },
    async removeVolume(pool, vol) {
      sim.enter('removeVolume');
      volumes.delete(volKey(pool, vol));
      await rm(volumePath(pool, vol), { recursive: true, force: true });
    },
    async copyVolume(src, dst) {
      sim.enter('copyVolume');
      needPool(dst.pool);
      if (src.snapshot) {
        if (!snapshots.has(snapKey(src.pool, src.snapshot)))
          throw new Error(`cannot copy snapshot ${src.snapshot.id}: it does not exist`);
      } else needVolume(src.pool, src.vol);
      if (volumes.has(volKey(dst.pool, dst.vol))) return;
      const from = src.snapshot ? snapshotPath(src.pool, src.snapshot) : volumePath(src.pool, src.vol);
      await cp(from, volumePath(dst.pool, dst.vol), { recursive: true });
      volumes.set(volKey(dst.pool, dst.vol), {});
    },
    async snapshotExists(pool, snap) {
      return stat(snapshotPath(pool, snap)).then(
        () => true,
        () => false,
      );
    },
    async volumeExists(pool, vol) {
      return volumes.has(volKey(pool, vol));
    },
    snapshotPath,
    async ensureSnapshot(pool, s) {
      sim.enter('ensureSnapshot');
      needVolume(pool, s.volume);
      if (snapshots.has(snapKey(pool, s))) return;
      await cp(volumePath(pool, s.volume), snapshotPath(pool, s), { recursive: true });
      snapshots.add(snapKey(pool, s));
    },
    async removeSnapshot(pool, s) {
      sim.enter('removeSnapshot');
      snapshots.delete(snapKey(pool, s));
      await rm(snapshotPath(pool, s), { recursive: true, force: true });
    },
    async restoreSnapshot(pool, s) {
      sim.enter('restoreSnapshot');
      needVolume(pool, s.volume);
      if (!snapshots.has(snapKey(pool, s))) throw new Error(`snapshot ${s.id} does not exist`);
      await rm(volumePath(pool, s.volume), { recursive: true, force: true });
      await cp(snapshotPath(pool, s), volumePath(pool, s.volume), { recursive: true });
    },
    unmountPool(name) {
      pools.delete(name);
    },
    async loseVolume(pool, vol) {
      volumes.delete(volKey(pool, vol));
      await rm(path.join(deps.root, pool, vol.type, vol.id), { recursive: true, force: true });
    },
  };
  return driver;
}

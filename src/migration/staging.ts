import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PoolSpec, StorageDriver, VolumeRef } from '../host/storage/types.ts';

export const STAGING_KIND = { container: 'container', custom: 'custom' } as const;
type StagingKind = (typeof STAGING_KIND)[keyof typeof STAGING_KIND];

/** A volume being received, or (`held`) a read-only snapshot a source sends from and removes after. */
type Mark =
  | { kind: StagingKind; id: string; pool: string; snapshots: string[] }
  | { kind: 'held'; id: string; pool: string; volume: VolumeRef };

/** The pool's spec and driver, once it is ready (throws with the reason otherwise). */
export type PoolAccess = (name: string) => Promise<{ spec: PoolSpec; driver: StorageDriver }>;

/** A volume being received: it has no row until commit, and a mark on disk says so. */
export interface Staging {
  target: {
    /** Where the stream lands (the volume's directory). */
    path: string;
    /** Snapshot the volume as it is now under `id` (called after each snapshot's session). */
    snapshot(id: string, signal: AbortSignal): Promise<void>;
    /**
     * On a pool whose snapshots are copies (dir): where snapshot `id`'s own session lands, then `adopt`, which
     * puts it in place and returns its path (the next session's basis).
     */
    landSnapshot?(id: string): Promise<{ path: string; adopt(): Promise<string> }>;
  };
  /** On a pool of subvolumes, when streams are asked for: where they land and how they are adopted. */
  streams?: {
    landing: string;
    adoptSnapshot(
      id: string,
      from: string,
      edit?: (path: string) => Promise<void>,
      signal?: AbortSignal,
    ): Promise<void>;
    adoptVolume(from: string, signal?: AbortSignal): Promise<void>;
  };
  /** Record a snapshot id before it is made, so a crash removes it too. */
  addSnapshot(id: string): Promise<void>;
  /** The rows are committed: the volume is the database's. */
  commit(): Promise<void>;
  /** Remove the volume, its snapshots and the mark. */
  abort(): Promise<void>;
}

/**
 * Staging of received volumes. The data lands in the volume's final place on its pool (no copy at the
 * end), under a fresh id that no row names yet; `<stateDir>/migrations/<id>.json` marks it until the
 * rows commit. At start, `sweep` removes every marked volume whose row never came (a crash or kill -9
 * mid-transfer), so a failed copy leaves nothing behind.
 */
export function createStaging(opts: { stateDir: string; pools: PoolAccess }) {
  const dir = path.join(opts.stateDir, 'migrations');
  const markPath = (id: string) => path.join(dir, `${id}.json`);
  const writeMark = async (m: Mark) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = `${markPath(m.id)}.tmp`;
    await writeFile(tmp, JSON.stringify(m), { mode: 0o600, flush: true });
    await rename(tmp, markPath(m.id));
  };
  const refOf = (m: { id: string; kind: StagingKind }): VolumeRef => ({
    id: m.id,
    type: m.kind === 'container' ? 'container' : 'custom',
  });
  const remove = async (m: Mark) => {
    const { spec, driver } = await opts.pools(m.pool);
    if (m.kind === 'held') {
      await driver.removeSnapshot(spec, { volume: m.volume, id: m.id });
      await rm(markPath(m.id), { force: true });
      return;
    }
    const ref = refOf(m);
    for (const s of m.snapshots) await driver.removeSnapshot(spec, { volume: ref, id: s });
    await driver.removeVolume(spec, ref);
    await rm(markPath(m.id), { force: true });
  };
  return {
    /**
     * Stage a volume. With `streams` on a pool of subvolumes, no volume is made up front: the streams
     * land in its landing path and are adopted (the caller asks only when the pool offers it).
     */
    async begin(m: { kind: StagingKind; id: string; pool: string }, o: { streams?: boolean } = {}): Promise<Staging> {
      const mark = { ...m, snapshots: [] as string[] };
      const { spec, driver } = await opts.pools(m.pool);
      const sv = o.streams ? driver.subvolumeStreams : undefined;
      if (o.streams && !sv) throw new Error(`Storage pool "${m.pool}" cannot receive subvolume streams`);
      await writeMark(mark);
      const ref = refOf(mark);
      const landing = (l: NonNullable<StorageDriver['snapshotLanding']>) => async (id: string) => {
        const snap = { volume: ref, id };
        const at = await l.begin(spec, snap);
        return { path: at, adopt: () => l.adopt(spec, snap).then(() => driver.snapshotPath(spec, snap)) };
      };
      try {
        if (!sv) await driver.ensureVolume(spec, ref, {});
      } catch (e) {
        await remove(mark).catch(() => undefined);
        throw e;
      }
      return {
        target: {
          path: driver.volumePath(spec, ref),
          snapshot: (id, signal) => driver.ensureSnapshot(spec, { volume: ref, id }, signal),
          ...(driver.snapshotLanding && !sv ? { landSnapshot: landing(driver.snapshotLanding) } : {}),
        },
        ...(sv
          ? {
              streams: {
                landing: sv.landingPath(spec, ref),
                adoptSnapshot: (id, from, edit, signal) =>
                  sv.adoptSnapshot(spec, { volume: ref, id }, from, edit, signal),
                adoptVolume: (from, signal) => sv.adoptVolume(spec, ref, from, signal),
              },
            }
          : {}),
        async addSnapshot(id) {
          mark.snapshots.push(id);
          await writeMark(mark);
        },
        commit: () => rm(markPath(mark.id), { force: true }),
        abort: () => remove(mark),
      };
    },

    /**
     * A read-only snapshot of the volume as it is now, for a source to send from (a running container
     * keeps writing to the volume itself); `release` removes it, and so does a sweep after a crash.
     */
    async hold(
      pool: string,
      volume: VolumeRef,
      signal?: AbortSignal,
    ): Promise<{ path: string; release(): Promise<void> }> {
      const mark: Mark = { kind: 'held', id: randomUUID(), pool, volume };
      const { spec, driver } = await opts.pools(pool);
      await writeMark(mark);
      const snap = { volume, id: mark.id };
      const release = () => remove(mark);
      try {
        await driver.ensureSnapshot(spec, snap, signal);
      } catch (e) {
        await release().catch(() => undefined);
        throw e;
      }
      return { path: driver.snapshotPath(spec, snap), release };
    },

    /** Remove what failed migrations left (marks whose row does not exist); keep the committed ones. */
    async sweep(hasRow: (kind: StagingKind, id: string) => Promise<boolean>): Promise<number> {
      const names = await readdir(dir).catch(() => [] as string[]);
      let removed = 0;
      for (const name of names) {
        if (name.endsWith('.tmp')) {
          await rm(path.join(dir, name), { force: true });
          continue;
        }
        // a container leaving this member has a mark of its own (leaving-marks.ts)
        if (!name.endsWith('.json') || name.startsWith('leaving-')) continue;
        const mark = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as Mark;
        if (mark.kind !== 'held' && (await hasRow(mark.kind, mark.id))) await rm(markPath(mark.id), { force: true });
        else {
          await remove(mark);
          removed++;
        }
      }
      return removed;
    },
  };
}
export type StagingStore = ReturnType<typeof createStaging>;

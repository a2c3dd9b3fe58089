import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { PoolSpec, StorageDriver, VolumeRef } from '../host/storage/types.ts';

export const STAGING_KIND = { container: 'container', custom: 'custom' } as const;
type StagingKind = (typeof STAGING_KIND)[keyof typeof STAGING_KIND];

interface Mark {
  kind: StagingKind;
  id: string;
  pool: string;
  snapshots: string[];
}

/** The pool's spec and driver, once it is ready (throws with the reason otherwise). */
export type PoolAccess = (name: string) => Promise<{ spec: PoolSpec; driver: StorageDriver }>;

/** A volume being received: it has no row until commit, and a mark on disk says so. */
export interface Staging {
  target: {
    /** Where the stream lands (the volume's directory). */
    path: string;
    /** Snapshot the volume as it is now under `id` (called after each snapshot's session). */
    snapshot(id: string, signal: AbortSignal): Promise<void>;
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
  const refOf = (m: Mark): VolumeRef => ({ id: m.id, type: m.kind === 'container' ? 'container' : 'custom' });
  const remove = async (m: Mark) => {
    const { spec, driver } = await opts.pools(m.pool);
    const ref = refOf(m);
    for (const s of m.snapshots) await driver.removeSnapshot(spec, { volume: ref, id: s });
    await driver.removeVolume(spec, ref);
    await rm(markPath(m.id), { force: true });
  };
  return {
    async begin(m: Omit<Mark, 'snapshots'>): Promise<Staging> {
      const mark: Mark = { ...m, snapshots: [] };
      const { spec, driver } = await opts.pools(m.pool);
      await writeMark(mark);
      const ref = refOf(mark);
      try {
        await driver.ensureVolume(spec, ref, {});
      } catch (e) {
        await remove(mark).catch(() => undefined);
        throw e;
      }
      return {
        target: {
          path: driver.volumePath(spec, ref),
          snapshot: (id, signal) => driver.ensureSnapshot(spec, { volume: ref, id }, signal),
        },
        async addSnapshot(id) {
          mark.snapshots.push(id);
          await writeMark(mark);
        },
        commit: () => rm(markPath(mark.id), { force: true }),
        abort: () => remove(mark),
      };
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
        if (await hasRow(mark.kind, mark.id)) await rm(markPath(mark.id), { force: true });
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

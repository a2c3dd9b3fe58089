/**
 * A pool's trash: a directory removed from a pool is renamed into `<pool>/.trash` (atomic and O(1): it is
 * gone from where svcd and LXC look the moment the rename returns) and removed in the background, one
 * entry at a time. What a crash leaves there is removed by the next sweep (the pool's ensure, at start and
 * on every resync). The trash must be on the path's filesystem: where a rename cannot move it (EXDEV, a
 * user source with a mount under the pool), the path is removed in place.
 */
import { lstatSync } from 'node:fs';
import { mkdir, readdir, rename } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { isErrno, removeTree } from './fs-helpers.ts';

/** The trash directory of a pool root (also in pool-layout's OWN_SUBDIRS: a pool's removal takes it). */
export const TRASH_DIR = '.trash';
export const trashDirOf = (poolRoot: string) => path.join(poolRoot, TRASH_DIR);

export interface TrashDeps {
  /** `rm -rf` of one entry (tests pass one that waits, to stand for a crash before it ran). */
  remove?: (p: string) => Promise<void>;
  /** A background sweep's failure (the next sweep tries again). */
  onError?: (err: unknown, trashDir: string) => void;
}

export interface Trash {
  /** Move `p` into `trashDir` (same filesystem) and have it removed in the background; absent is fine. */
  discard(p: string, trashDir: string): Promise<void>;
  /** Remove what is in `trashDir` now (also what an earlier process left); resolves when done. */
  sweep(trashDir: string): Promise<void>;
}

export function createTrash(deps: TrashDeps = {}): Trash {
  const remove = deps.remove ?? removeTree;
  /** Per trash dir: the sweep running, and whether another must follow it (new entries arrived meanwhile). */
  const sweeps = new Map<string, { running: Promise<void>; again: boolean }>();

  async function sweepOnce(trashDir: string): Promise<void> {
    const entries = await readdir(trashDir).catch((e: unknown) => (isErrno(e, 'ENOENT') ? [] : Promise.reject(e)));
    for (const name of entries) await remove(path.join(trashDir, name));
  }

  function sweep(trashDir: string): Promise<void> {
    const current = sweeps.get(trashDir);
    if (current) {
      current.again = true;
      return current.running;
    }
    const state = { running: Promise.resolve(), again: false };
    state.running = (async () => {
      try {
        do {
          state.again = false;
          await sweepOnce(trashDir);
        } while (state.again);
      } finally {
        sweeps.delete(trashDir);
      }
    })();
    sweeps.set(trashDir, state);
    return state.running;
  }

  return {
    sweep,
    async discard(p, trashDir) {
      // Absent (a retried delete): nothing to move, and no thread-pool hand-off to find out.
      if (lstatSync(p, { throwIfNoEntry: false }) === undefined) return;
      if (lstatSync(trashDir, { throwIfNoEntry: false }) === undefined)
        await mkdir(trashDir, { recursive: true, mode: 0o700 });
      try {
        await rename(p, path.join(trashDir, `${path.basename(p)}.${randomUUID()}`));
      } catch (e) {
        if (isErrno(e, 'ENOENT')) return;
        if (!isErrno(e, 'EXDEV', 'EBUSY', 'EPERM', 'EACCES')) throw e;
        await removeTree(p);
        return;
      }
      sweep(trashDir).catch((err: unknown) => deps.onError?.(err, trashDir));
    },
  };
}

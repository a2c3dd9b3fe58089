import { HostConflictError } from '../errors.ts';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ImageFiles } from './inspect-image.ts';
import { imagesDirOf } from '../layout.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';

const FINGERPRINT = /^[0-9a-f]{64}$/;
const TEMP_PREFIX = '.tmp-';

/** Where an image's files live under `<stateDir>/images/`. */
export function imageFilesIn(dir: string, fingerprint: string, split: boolean): ImageFiles {
  if (!FINGERPRINT.test(fingerprint)) throw new Error(`invalid image fingerprint ${JSON.stringify(fingerprint)}`);
  const meta = path.join(dir, fingerprint);
  return split ? { meta, rootfs: `${meta}.rootfs` } : { meta };
}

/**
 * The image files on this host: one set per fingerprint, shared by the projects that have it.
 * Received files are written to temporary names in the same directory and renamed into place, so
 * a fingerprint's files are either absent or complete. Work on one fingerprint is serialized.
 */
export function createImageStore(opts: { stateDir: string }) {
  const dir = imagesDirOf(opts.stateDir);
  const startedAt = Date.now();
  const locks = createKeyedMutex();
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );

  const store = {
    dir,
    async init(): Promise<void> {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    },
    /** Fresh temporary paths for the files of one incoming image. */
    tempFiles(split: boolean): ImageFiles {
      const base = path.join(dir, `${TEMP_PREFIX}${randomUUID()}`);
      return split ? { meta: `${base}.meta`, rootfs: `${base}.rootfs` } : { meta: `${base}.meta` };
    },
    files: (fingerprint: string, split: boolean) => imageFilesIn(dir, fingerprint, split),

    /** Run `fn` with no other work on this fingerprint's files. */
    withLock: <T>(fingerprint: string, fn: () => Promise<T>): Promise<T> => locks.run(fingerprint, fn),

    /** Move received files into place (call under the fingerprint's lock). Files already there are kept. */
    async commit(fingerprint: string, temp: ImageFiles): Promise<ImageFiles> {
      const split = temp.rootfs !== undefined;
      const final = imageFilesIn(dir, fingerprint, split);
      if (await exists(final.meta)) {
        // Same fingerprint, same bytes; a unified file equal to a split image's two files joined is refused.
        if ((await exists(`${final.meta}.rootfs`)) !== split)
          throw new HostConflictError(
            `Image ${fingerprint} is already stored as a ${split ? 'unified' : 'split'} image`,
          );
        await store.discard(temp);
        return final;
      }
      if (temp.rootfs && final.rootfs) await rename(temp.rootfs, final.rootfs);
      await rename(temp.meta, final.meta);
      return final;
    },

    /** Remove temporary files; absent is fine. */
    async discard(temp: ImageFiles): Promise<void> {
      await Promise.all([temp.meta, temp.rootfs].filter((p): p is string => !!p).map((p) => rm(p, { force: true })));
    },

    /** Remove a fingerprint's files (call under its lock, once no project has it). */
    async removeFiles(fingerprint: string): Promise<void> {
      const f = imageFilesIn(dir, fingerprint, true);
      await rm(f.meta, { force: true });
      await rm(f.rootfs!, { force: true });
    },

    /** Sizes of the files, for Content-Length on export. */
    async sizes(files: ImageFiles): Promise<{ meta: number; rootfs?: number }> {
      const meta = (await stat(files.meta)).size;
      return files.rootfs ? { meta, rootfs: (await stat(files.rootfs)).size } : { meta };
    },

    /**
     * At start: remove temporary files left by an interrupted upload, and files no project has
     * any more (a project deleted with its images).
     */
    async sweep(inUse: (fingerprint: string) => Promise<boolean>): Promise<string[]> {
      await store.init();
      const removed: string[] = [];
      for (const name of await readdir(dir)) {
        if (name.startsWith(TEMP_PREFIX)) {
          // Only what an earlier svcd left: uploads of this one may already be under way.
          const st = await stat(path.join(dir, name)).catch(() => undefined);
          if (st && st.mtimeMs < startedAt) {
            await rm(path.join(dir, name), { force: true, recursive: true });
            removed.push(name);
          }
          continue;
        }
        const fp = name.replace(/\.rootfs$/, '');
        if (!FINGERPRINT.test(fp)) continue;
        await store.withLock(fp, async () => {
          if (!(await inUse(fp))) {
            await rm(path.join(dir, name), { force: true });
            removed.push(name);
          }
        });
      }
      return removed;
    },
  };
  return store;
}
export type ImageStore = ReturnType<typeof createImageStore>;

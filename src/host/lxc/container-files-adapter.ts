import { existsSync, statSync, truncateSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { ContainerFilesAdapter } from '../../reconcilers/adapters.ts';
import { ensureDir } from '../ensure-dir.ts';
import { writeFileIfChanged } from './write-file-if-changed.ts';

/** The real files of containers under the state dir. */
export function createContainerFilesAdapter(): ContainerFilesAdapter {
  return {
    ensureDir,
    writeIfChanged: writeFileIfChanged,
    async remove(file) {
      await rm(file, { force: true });
    },
    exists: existsSync,
    rename,
    async resetLog(file) {
      // A look first: most starts find nothing to truncate or remove. A truncate to 0 is a metadata change (no
      // data written), done in place: the promise form opens a FileHandle and takes three thread-pool trips.
      if (statSync(file, { throwIfNoEntry: false })?.size) truncateSync(file, 0);
      if (existsSync(`${file}.1`)) await rm(`${file}.1`, { force: true });
    },
  };
}

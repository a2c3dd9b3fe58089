import fs from 'node:fs';
import { HostInputError } from '../errors.ts';
import { code, notFound } from './file-errors.ts';
import { fdPath, lstatFinal } from './resolve-in-root.ts';
import type { ContainerFs } from './views.ts';
import { withResolved } from './with-resolved.ts';

/** DELETE: a file, a symlink (not what it points to) or an empty directory. */
export function removeEntry(fsys: ContainerFs, path: string): void {
  withResolved(fsys, path, (r) => {
    if (r.name === undefined)
      throw new HostInputError(`Path "${path}" cannot be deleted (it names a directory through "/", "." or "..")`);
    const st = lstatFinal(r, path, fsys.main.guard);
    if (!st) throw notFound(path);
    try {
      if (st.isDirectory()) fs.rmdirSync(fdPath(r.dir, r.name));
      else fs.unlinkSync(fdPath(r.dir, r.name));
    } catch (e) {
      if (code(e) === 'ENOTEMPTY' || code(e) === 'EEXIST') throw new HostInputError(`Directory "${path}" is not empty`);
      if (code(e) === 'ENOENT') throw notFound(path);
      if (code(e) === 'EISDIR') throw new HostInputError(`Path "${path}" changed while it was deleted`);
      if (code(e) === 'EBUSY') throw new HostInputError(`Path "${path}" is a mount point`);
      throw e;
    }
  });
}

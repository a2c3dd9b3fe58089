import fs from 'node:fs';
import { creationDir } from './creation-dir.ts';
import {
  applyOwner,
  existingOwner,
  ownerFor,
  ownerGiven,
  ownerOf,
  type Owner,
  type WriteRequest,
} from './entry-owner.ts';
import { createError } from './file-errors.ts';
import { fdPath } from './resolve-in-root.ts';
import type { ContainerFs, FileView } from './views.ts';
import { withResolved } from './with-resolved.ts';

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY } = fs.constants;

/** POST a directory: created (uid/gid 0, mode 0755 unless given); an existing one is fine (owner/mode applied when given). */
export function makeDirectory(fsys: ContainerFs, path: string, req: WriteRequest): void {
  withResolved(fsys, path, (r) => {
    const name = r.name;
    const old =
      name === undefined ? ownerOf(fsys.main, fs.fstatSync(r.dir)) : existingOwner(fsys, r, path, 'directory');
    const owner = ownerFor(req, old, 0o755);
    if (old && !ownerGiven(req)) return;
    if (old) return applyOwnerAt(fsys.main, r.dir, name, owner);
    const where = creationDir(fsys, r);
    try {
      try {
        fs.mkdirSync(fdPath(where.dir, name!), 0o700);
      } catch (e) {
        throw createError(e, path);
      }
      applyOwnerAt(where.view, where.dir, name!, owner);
    } finally {
      where.close();
    }
  });
}

/** Apply an owner and mode to the directory `name` in `dir` (never through a symlink), or to `dir` itself. */
function applyOwnerAt(view: FileView, dir: number, name: string | undefined, owner: Owner): void {
  const fd =
    name === undefined
      ? fs.openSync(fdPath(dir), O_RDONLY | O_DIRECTORY)
      : fs.openSync(fdPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    applyOwner(view, fd, owner);
  } finally {
    fs.closeSync(fd);
  }
}

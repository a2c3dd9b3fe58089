import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { HostInputError } from '../errors.ts';
import { creationDir, unlinkQuietly } from './creation-dir.ts';
import { existingOwner, type WriteRequest } from './entry-owner.ts';
import { createError, renameError } from './file-errors.ts';
import { fdPath } from './resolve-in-root.ts';
import { toView, type ContainerFs } from './views.ts';
import { finalName, withResolved } from './with-resolved.ts';

/** POST a symlink (body = target): created, or replacing a symlink; owned by uid/gid 0 unless given. */
export function makeSymlink(fsys: ContainerFs, path: string, target: string, req: WriteRequest): void {
  if (target === '' || target.includes('\0') || Buffer.byteLength(target) > 4095)
    throw new HostInputError('A symlink target must be 1 to 4095 bytes without NUL');
  withResolved(fsys, path, (r) => {
    const name = finalName(path, r);
    existingOwner(fsys, r, path, 'symlink');
    const where = creationDir(fsys, r);
    const temp = `.svcd-link.${randomBytes(8).toString('hex')}`;
    try {
      try {
        fs.symlinkSync(target, fdPath(where.dir, temp));
      } catch (e) {
        throw createError(e, path);
      }
      try {
        // lchown does not follow the final component: the link just made (its name is random and new).
        fs.lchownSync(
          fdPath(where.dir, temp),
          toView(where.view, 'uid', req.uid ?? 0),
          toView(where.view, 'gid', req.gid ?? 0),
        );
        fs.renameSync(fdPath(where.dir, temp), fdPath(where.dir, name));
      } catch (e) {
        unlinkQuietly(fdPath(where.dir, temp));
        throw renameError(e, path);
      }
    } finally {
      where.close();
    }
  });
}

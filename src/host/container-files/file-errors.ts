/** The file API's errors: what the host's file system refused, named by the container path. */
import { HostNotFoundError, HostInputError } from '../errors.ts';

/** The errno code of a file system error. */
export const code = (e: unknown) => (e as NodeJS.ErrnoException).code;

export const notFound = (path: string) => new HostNotFoundError(`Path "${path}" not found in the container`);
export const unsupported = (path: string) =>
  new HostInputError(`Path "${path}" is not a regular file, directory or symlink`);

/** What the host's file system refused, as a 400 (404 when it is gone) naming the path; other errors as they are. */
export function fsError(e: unknown, path: string): unknown {
  const messages: Record<string, string> = {
    ENOSPC: 'no space left on the file system',
    EDQUOT: 'disk quota exceeded',
    EROFS: 'read-only file system',
    EPERM: 'operation not permitted (e.g. an immutable file)',
    EACCES: 'permission denied',
    ENAMETOOLONG: 'name too long',
    EBUSY: 'busy (e.g. a mount point)',
    ETXTBSY: 'text file busy',
    EMLINK: 'too many links',
    EFBIG: 'file too large',
    ENOTDIR: 'not a directory',
  };
  const c = code(e);
  if (c === 'ENOENT')
    return new HostNotFoundError(`Path "${path}" not found in the container (it changed during the request)`);
  if (c && messages[c]) return new HostInputError(`Path "${path}": ${messages[c]}`);
  return e;
}

/** What refused creating an entry at `path`. */
export function createError(e: unknown, path: string): unknown {
  if (code(e) === 'EOVERFLOW')
    return new HostInputError(
      `Cannot create "${path}": it is on a file system mounted by the unprivileged container itself (e.g. a tmpfs), where the host cannot create entries; existing files there can be read, appended to and deleted`,
    );
  if (code(e) === 'EEXIST') return new HostInputError(`Path "${path}" already exists`);
  return fsError(e, path);
}

/** A rename onto `path` that found a directory there. */
export function renameError(e: unknown, path: string): unknown {
  if (code(e) === 'EISDIR' || code(e) === 'ENOTEMPTY') return new HostInputError(`Path "${path}" is a directory`);
  return e;
}

/**
 * The file API's operations on a container's files (views.ts), every path resolved in-root
 * (resolve-in-root.ts). Ownership is always the container's view of it. Only regular files,
 * directories and symlinks are served or replaced: a device node or FIFO planted in the container
 * is refused, never opened (a privileged container could plant the host's disk).
 *
 * Uploads go to a temporary file in the target directory, renamed over the target once the body
 * is complete, so a failed upload leaves the old file as it was; appends go in place and are cut
 * back to the old size on failure.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import { fdPath, lstatFinal, openFinal, resolveParent, type Resolved } from './resolve-in-root.ts';
import { toInside, toView, type ContainerFs, type FileView } from './views.ts';

const { O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_RDONLY, O_WRONLY, O_APPEND } = fs.constants;
const code = (e: unknown) => (e as NodeJS.ErrnoException).code;
const unlinkQuietly = (p: string) => {
  try {
    fs.unlinkSync(p);
  } catch {
    /* never made, or already gone */
  }
};

/**
 * Files up to this size are read and written with synchronous calls in one go (their data is in the page
 * cache either way): a small file costs one event-loop turn instead of a thread-pool round trip per step.
 */
export const SMALL_FILE = 64 * 1024;

function writeAllSync(fd: number, chunk: Uint8Array): void {
  for (let off = 0; off < chunk.byteLength; ) off += fs.writeSync(fd, chunk, off, chunk.byteLength - off);
}

/** FileHandle.write may write less than asked (disk nearly full): go on until all is written. */
async function writeAll(fh: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let off = 0; off < chunk.byteLength; ) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
}

export interface Owner {
  uid: number;
  gid: number;
  /** Permission bits (07777). */
  mode: number;
}

export type Entry =
  /** A small file's whole content (`data`), or an open handle on a larger one (the caller closes it). */
  | (Owner & { type: 'file'; size: number; data: Buffer; handle?: undefined })
  | (Owner & { type: 'file'; size: number; handle: FileHandle; data?: undefined })
  | (Owner & { type: 'directory'; entries: string[] })
  | (Owner & { type: 'symlink'; target: string });

function ownerOf(view: FileView, st: fs.Stats): Owner {
  return { uid: toInside(view, 'uid', st.uid), gid: toInside(view, 'gid', st.gid), mode: st.mode & 0o7777 };
}

function withResolved<T>(fsys: ContainerFs, path: string, f: (r: Resolved) => T): T {
  const r = resolveParent(fsys.main.root, path, fsys.main.guard);
  try {
    return f(r);
  } finally {
    r.close();
  }
}

async function withResolvedAsync<T>(fsys: ContainerFs, path: string, f: (r: Resolved) => Promise<T>): Promise<T> {
  const r = resolveParent(fsys.main.root, path, fsys.main.guard);
  try {
    return await f(r);
  } finally {
    r.close();
  }
}

const notFound = (path: string) => new NotFoundError(`Path "${path}" not found in the container`);
const unsupported = (path: string) => new ValidationError(`Path "${path}" is not a regular file, directory or symlink`);

/** GET: a file (an open handle; the caller closes it), a directory's entry names, or a symlink's target. */
export async function readEntry(fsys: ContainerFs, path: string): Promise<Entry> {
  return withResolvedAsync(fsys, path, async (r) => {
    const fin = openFinal(r, path, fsys.main.guard);
    if (!fin) throw notFound(path);
    try {
      const owner = ownerOf(fsys.main, fin.st);
      if (fin.st.isFile()) {
        // Reopening the O_PATH fd opens the very inode that was checked.
        if (fin.st.size <= SMALL_FILE) {
          const fd = fs.openSync(fdPath(fin.fd), O_RDONLY);
          try {
            const data = Buffer.allocUnsafe(fin.st.size);
            let n = 0;
            while (n < data.length) {
              const got = fs.readSync(fd, data, n, data.length - n, n);
              if (got === 0) break;
              n += got;
            }
            // The size when checked: a file shrinking meanwhile is served as far as it goes.
            return { ...owner, type: 'file', size: n, data: n === data.length ? data : data.subarray(0, n) };
          } finally {
            fs.closeSync(fd);
          }
        }
        const handle = await open(fdPath(fin.fd), O_RDONLY);
        return { ...owner, type: 'file', size: fin.st.size, handle };
      }
      if (fin.st.isDirectory()) return { ...owner, type: 'directory', entries: fs.readdirSync(fdPath(fin.fd)).sort() };
      if (fin.st.isSymbolicLink()) return { ...owner, type: 'symlink', target: fs.readlinkSync(fdPath(r.dir, r.name!)) };
      throw unsupported(path);
    } finally {
      fs.closeSync(fin.fd);
    }
  });
}

/**
 * Where to create an entry in the directory `r.dir`: there, unless that is behind an idmapped
 * mount (the kernel refuses host root creating there), then in the host directory behind that
 * mount: the directory's path in the container (the kernel's name for the fd) made relative to
 * the mount, resolved in-root in the host directory, and used only when it is the very same
 * directory (device and inode). Otherwise still `r.dir` (a mount that is not idmapped accepts host ids).
 */
function creationDir(fsys: ContainerFs, r: Resolved): { view: FileView; dir: number; close(): void } {
  const main = { view: fsys.main, dir: r.dir, close: () => {} };
  if (!fsys.create?.length) return main;
  let where: string;
  try {
    where = fs.readlinkSync(fdPath(r.dir));
  } catch {
    return main;
  }
  if (!where.startsWith('/')) return main;
  const under = (m: string) => m === '/' || where === m || where.startsWith(`${m}/`);
  const candidates = fsys.create.filter((c) => under(c.mountPath)).sort((a, b) => b.mountPath.length - a.mountPath.length);
  const here = fs.fstatSync(r.dir);
  for (const c of candidates) {
    let other: Resolved;
    try {
      other = resolveParent(c.root, `/${c.mountPath === '/' ? where : where.slice(c.mountPath.length)}/.`);
    } catch {
      continue;
    }
    const st = fs.fstatSync(other.dir);
    if (st.dev === here.dev && st.ino === here.ino) return { view: c, dir: other.dir, close: () => other.close() };
    other.close();
  }
  return main;
}

function createError(e: unknown, path: string): unknown {
  if (code(e) === 'EOVERFLOW')
    return new ValidationError(
      `Cannot create "${path}": it is on a file system mounted by the unprivileged container itself (e.g. a tmpfs), where the host cannot create entries; existing files there can be read, appended to and deleted`,
    );
  if (code(e) === 'EEXIST') return new ValidationError(`Path "${path}" already exists`);
  return fsError(e, path);
}

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
  if (c === 'ENOENT') return new NotFoundError(`Path "${path}" not found in the container (it changed during the request)`);
  if (c && messages[c]) return new ValidationError(`Path "${path}": ${messages[c]}`);
  return e;
}

function applyOwner(view: FileView, fd: number, o: Owner): void {
  fs.fchownSync(fd, toView(view, 'uid', o.uid), toView(view, 'gid', o.gid));
  fs.fchmodSync(fd, o.mode);
}

export interface WriteRequest {
  uid?: number | undefined;
  gid?: number | undefined;
  mode?: number | undefined;
}

function finalName(path: string, r: Resolved): string {
  if (r.name === undefined) throw new ValidationError(`Path "${path}" names a directory`);
  return r.name;
}

/** Check a target's final component as the owner a write keeps; undefined when absent. */
function existingOwner(fsys: ContainerFs, r: Resolved, path: string, want: 'file' | 'directory' | 'symlink'): Owner | undefined {
  const st = lstatFinal(r, path, fsys.main.guard);
  if (!st) return undefined;
  const is = st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'other';
  if (is !== want) {
    if (is === 'directory') throw new ValidationError(`Path "${path}" is a directory`);
    if (is === 'symlink') throw new ValidationError(`Path "${path}" is a symlink: delete it first (writes never go through a symlink)`);
    if (is === 'other') throw unsupported(path);
    throw new ValidationError(`Path "${path}" already exists and is a ${is}`);
  }
  return ownerOf(fsys.main, st);
}

/**
 * POST a file: `body` is the whole content of a small file (written at once), or a stream written as it
 * comes. Overwrite (default) replaces the file (keeping its owner and mode unless given); append adds
 * to it. A new file gets uid/gid 0 and mode 0644 unless given.
 */
export async function writeFile(fsys: ContainerFs, path: string, req: WriteRequest & { append: boolean }, body: AsyncIterable<Uint8Array> | Buffer): Promise<void> {
  await withResolvedAsync(fsys, path, async (r) => {
    const name = finalName(path, r);
    const old = existingOwner(fsys, r, path, 'file');
    const owner: Owner = { uid: req.uid ?? old?.uid ?? 0, gid: req.gid ?? old?.gid ?? 0, mode: req.mode ?? old?.mode ?? 0o644 };
    if (req.append && old) return appendTo(fsys, r, path, owner, req, body);
    const where = creationDir(fsys, r);
    const temp = `.svcd-upload.${randomBytes(8).toString('hex')}`;
    let fh: FileHandle | undefined;
    let placed = false;
    try {
      const flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
      if (Buffer.isBuffer(body)) {
        let fd: number;
        try {
          fd = fs.openSync(fdPath(where.dir, temp), flags, 0o600);
        } catch (e) {
          throw createError(e, path);
        }
        try {
          writeAllSync(fd, body);
          applyOwner(where.view, fd, owner);
        } finally {
          fs.closeSync(fd);
        }
      } else {
        const out = await open(fdPath(where.dir, temp), flags, 0o600).catch((e: unknown) => Promise.reject(createError(e, path)));
        fh = out;
        for await (const chunk of body) await writeAll(out, chunk);
        applyOwner(where.view, out.fd, owner);
        fh = undefined;
        await out.close();
      }
      // rename replaces whatever is at `name` now (never following it), inside the same directory.
      try {
        fs.renameSync(fdPath(where.dir, temp), fdPath(where.dir, name));
      } catch (e) {
        if (code(e) === 'EISDIR' || code(e) === 'ENOTEMPTY') throw new ValidationError(`Path "${path}" is a directory`);
        throw e;
      }
      placed = true;
    } finally {
      await fh?.close().catch(() => {});
      if (!placed) unlinkQuietly(fdPath(where.dir, temp));
      where.close();
    }
  });
}

async function appendTo(fsys: ContainerFs, r: Resolved, path: string, owner: Owner, req: WriteRequest, body: AsyncIterable<Uint8Array> | Buffer): Promise<void> {
  const fin = openFinal(r, path, fsys.main.guard);
  if (!fin) throw notFound(path);
  let fh: FileHandle | undefined;
  try {
    if (!fin.st.isFile()) throw unsupported(path);
    fh = await open(fdPath(fin.fd), O_WRONLY | O_APPEND);
    const size = (await fh.stat()).size;
    try {
      for await (const chunk of Buffer.isBuffer(body) ? [body] : body) await writeAll(fh, chunk);
    } catch (e) {
      await fh.truncate(size).catch(() => {});
      throw e;
    }
    if (req.uid !== undefined || req.gid !== undefined || req.mode !== undefined) applyOwner(fsys.main, fh.fd, owner);
  } finally {
    await fh?.close().catch(() => {});
    fs.closeSync(fin.fd);
  }
}

/** POST a directory: created (uid/gid 0, mode 0755 unless given); an existing one is fine (owner/mode applied when given). */
export function makeDirectory(fsys: ContainerFs, path: string, req: WriteRequest): void {
  withResolved(fsys, path, (r) => {
    const name = r.name;
    const old = name === undefined ? ownerOf(fsys.main, fs.fstatSync(r.dir)) : existingOwner(fsys, r, path, 'directory');
    const given = req.uid !== undefined || req.gid !== undefined || req.mode !== undefined;
    const owner: Owner = { uid: req.uid ?? old?.uid ?? 0, gid: req.gid ?? old?.gid ?? 0, mode: req.mode ?? old?.mode ?? 0o755 };
    if (old && !given) return;
    if (old) {
      const fd = name === undefined ? fs.openSync(fdPath(r.dir), O_RDONLY | O_DIRECTORY) : fs.openSync(fdPath(r.dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      try {
        applyOwner(fsys.main, fd, owner);
      } finally {
        fs.closeSync(fd);
      }
      return;
    }
    const where = creationDir(fsys, r);
    try {
      try {
        fs.mkdirSync(fdPath(where.dir, name!), 0o700);
      } catch (e) {
        throw createError(e, path);
      }
      const fd = fs.openSync(fdPath(where.dir, name!), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      try {
        applyOwner(where.view, fd, owner);
      } finally {
        fs.closeSync(fd);
      }
    } finally {
      where.close();
    }
  });
}

/** POST a symlink (body = target): created, or replacing a symlink; owned by uid/gid 0 unless given. */
export function makeSymlink(fsys: ContainerFs, path: string, target: string, req: WriteRequest): void {
  if (target === '' || target.includes('\0') || Buffer.byteLength(target) > 4095) throw new ValidationError('A symlink target must be 1 to 4095 bytes without NUL');
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
        fs.lchownSync(fdPath(where.dir, temp), toView(where.view, 'uid', req.uid ?? 0), toView(where.view, 'gid', req.gid ?? 0));
        fs.renameSync(fdPath(where.dir, temp), fdPath(where.dir, name));
      } catch (e) {
        unlinkQuietly(fdPath(where.dir, temp));
        if (code(e) === 'EISDIR' || code(e) === 'ENOTEMPTY') throw new ValidationError(`Path "${path}" is a directory`);
        throw e;
      }
    } finally {
      where.close();
    }
  });
}

/** DELETE: a file, a symlink (not what it points to) or an empty directory. */
export function removeEntry(fsys: ContainerFs, path: string): void {
  withResolved(fsys, path, (r) => {
    if (r.name === undefined) throw new ValidationError(`Path "${path}" cannot be deleted (it names a directory through "/", "." or "..")`);
    const st = lstatFinal(r, path, fsys.main.guard);
    if (!st) throw notFound(path);
    try {
      if (st.isDirectory()) fs.rmdirSync(fdPath(r.dir, r.name));
      else fs.unlinkSync(fdPath(r.dir, r.name));
    } catch (e) {
      if (code(e) === 'ENOTEMPTY' || code(e) === 'EEXIST') throw new ValidationError(`Directory "${path}" is not empty`);
      if (code(e) === 'ENOENT') throw notFound(path);
      if (code(e) === 'EISDIR') throw new ValidationError(`Path "${path}" changed while it was deleted`);
      if (code(e) === 'EBUSY') throw new ValidationError(`Path "${path}" is a mount point`);
      throw e;
    }
  });
}

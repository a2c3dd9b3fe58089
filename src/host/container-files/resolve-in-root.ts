/**
 * Resolve a path inside a container's root directory the way the container itself would, without
 * ever leaving that directory (an openat2(RESOLVE_IN_ROOT) done by hand, since Node has no openat):
 *
 * - a directory fd is kept per level; each component is opened relative to it through the magic
 *   link `/proc/self/fd/<dirfd>/<component>` with O_PATH|O_NOFOLLOW, so nothing but that one
 *   component is looked up by the kernel and a symlink there is never followed by it;
 * - `..` pops the stack of fds, clamped at the root (never asks the kernel for `..`);
 * - symlinks met on the way are read and their targets walked here, an absolute one from the root,
 *   at most MAX_SYMLINKS of them (ELOOP, as the kernel);
 * - the final component is never followed (the file API works on symlinks themselves).
 *
 * A symlink swapped in during a request is harmless: every step holds an fd on a directory that was
 * inside the root when it was opened, and a directory cannot be moved out of the container root.
 * No process is spawned; every fd opened here is closed (the root fd belongs to the caller).
 */
import fs from 'node:fs';
import { HostNotFoundError, HostInputError } from '../errors.ts';

/** O_PATH (Linux): an fd that only names a file; Node's constants do not export it. */
export const O_PATH = 0o10000000;
/** As Linux's MAXSYMLINKS. */
export const MAX_SYMLINKS = 40;

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY } = fs.constants;

/** The magic-link path of `name` inside the directory open as `dirFd` (or of the fd itself). */
export const fdPath = (dirFd: number, name?: string) =>
  name === undefined ? `/proc/self/fd/${dirFd}` : `/proc/self/fd/${dirFd}/${name}`;

const code = (e: unknown) => (e as NodeJS.ErrnoException).code;

/** Open a directory to use as a root (the container's rootfs, or `/proc/<pid>/root`). */
export function openRoot(dir: string): number {
  return fs.openSync(dir, O_PATH | O_DIRECTORY | O_RDONLY);
}

/**
 * The path's components, without NUL; a relative path counts from the root, as in LXD (the `lxc`
 * CLI sends `root/f` for `lxc file pull c/root/f`). Empty components (`//`, a trailing `/`) are
 * dropped, `.` and `..` kept for the walk.
 */
export function splitPath(p: string): string[] {
  if (p.includes('\0')) throw new HostInputError('Path must not contain NUL characters');
  if (p.length > 4096) throw new HostInputError('Path is longer than 4096 bytes');
  return p.split('/').filter((s) => s !== '');
}

/**
 * Called on every fd the walk opens, before anything else is asked of its file system (not even
 * fstat): throws to refuse going on (views.ts refuses pseudo and FUSE file systems).
 */
export type Guard = (fd: number, p: string) => void;

/** Where a path led: the directory holding its final component, and that component. */
export interface Resolved {
  /** O_PATH fd of the directory the final component is in (the root itself, or owned by this result). */
  dir: number;
  /** The final component; undefined when the path names a directory itself (`/`, `a/.`, `a/..`). */
  name: string | undefined;
  /** Close `dir` unless it is the root. */
  close(): void;
}

/**
 * Walk `p` from the root fd: every directory on the way is resolved (symlinks followed in-root),
 * the final component is not. Throws HostNotFoundError when a directory on the way is missing, a
 * HostInputError when one is not a directory or on a symlink loop.
 */
export function resolveParent(root: number, p: string, guard?: Guard): Resolved {
  const stack: number[] = [root];
  const pending = splitPath(p);
  let hops = 0;
  guard?.(root, p);
  const closeAbove = (depth: number) => {
    while (stack.length > depth) fs.closeSync(stack.pop()!);
  };
  try {
    for (;;) {
      const comp = pending.shift();
      if (comp === undefined) {
        // The path ended on `/`, `.` or `..`: it names the directory on top of the stack.
        const dir = stack.pop()!;
        closeAbove(1);
        return { dir, name: undefined, close: () => dir !== root && fs.closeSync(dir) };
      }
      if (comp === '.') continue;
      if (comp === '..') {
        if (stack.length > 1) fs.closeSync(stack.pop()!);
        continue;
      }
      if (pending.length === 0) {
        const dir = stack.pop()!;
        closeAbove(1);
        return { dir, name: comp, close: () => dir !== root && fs.closeSync(dir) };
      }
      const top = stack[stack.length - 1]!;
      let fd: number;
      try {
        fd = fs.openSync(fdPath(top, comp), O_PATH | O_NOFOLLOW);
      } catch (e) {
        if (code(e) === 'ENOENT') throw new HostNotFoundError(`Path "${p}": "${comp}" does not exist`);
        throw e;
      }
      let kind: 'dir' | 'link' | 'other';
      try {
        guard?.(fd, p);
        const st = fs.fstatSync(fd);
        kind = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'other';
      } catch (e) {
        fs.closeSync(fd);
        throw e;
      }
      if (kind === 'dir') {
        stack.push(fd);
        continue;
      }
      fs.closeSync(fd);
      if (kind === 'other') throw new HostInputError(`Path "${p}": "${comp}" is not a directory`);
      if (++hops > MAX_SYMLINKS) throw new HostInputError(`Path "${p}": too many levels of symbolic links`);
      // readlink does not follow its final component: this reads the link in `top` (if it was
      // replaced meanwhile, the new target is read or EINVAL, both still walked from here, in-root).
      let target: string;
      try {
        target = fs.readlinkSync(fdPath(top, comp));
      } catch (e) {
        if (code(e) === 'EINVAL' || code(e) === 'ENOENT')
          throw new HostInputError(`Path "${p}": "${comp}" changed while it was resolved`);
        throw e;
      }
      if (target === '') throw new HostNotFoundError(`Path "${p}": "${comp}" is an empty symlink`);
      if (target.startsWith('/')) closeAbove(1);
      pending.unshift(...target.split('/').filter((s) => s !== ''));
    }
  } catch (e) {
    closeAbove(1);
    throw e;
  }
}

/** What the final component is (never followed; guarded like the walk); undefined when it does not exist. */
export function lstatFinal(r: Resolved, p: string, guard?: Guard): fs.Stats | undefined {
  const fin = openFinal(r, p, guard);
  if (!fin) return undefined;
  fs.closeSync(fin.fd);
  return fin.st;
}

/**
 * Open the final component itself (O_PATH, never following it) and check what it is on the fd, so
 * that what is checked is what is used: a later reopen through `/proc/self/fd/<fd>` gets the same inode.
 */
export function openFinal(r: Resolved, p: string, guard?: Guard): { fd: number; st: fs.Stats } | undefined {
  let fd: number;
  try {
    fd =
      r.name === undefined
        ? fs.openSync(fdPath(r.dir), O_PATH | O_DIRECTORY)
        : fs.openSync(fdPath(r.dir, r.name), O_PATH | O_NOFOLLOW);
  } catch (e) {
    if (code(e) === 'ENOENT') return undefined;
    throw e;
  }
  try {
    guard?.(fd, p);
    return { fd, st: fs.fstatSync(fd) };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

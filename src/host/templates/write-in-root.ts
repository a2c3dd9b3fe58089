/**
 * Write a file at a path given in the container's terms into its root filesystem, resolving the
 * path as the container would see it (as in a chroot): a symlink is followed inside the rootfs
 * (absolute targets from the rootfs' top, `..` never above it), so a link planted in the container
 * (`/etc/hostname -> /etc/shadow` of the host, or `../../../..`) can never make svcd write outside
 * the rootfs. Meant for a stopped container (nothing inside can swap links meanwhile); the final
 * open is O_NOFOLLOW anyway.
 *
 * The lookups (lstat, readlink) are synchronous: a few µs each against ~40 µs of CPU per promise call;
 * the writes are not (see host/storage/fs-helpers.ts).
 */
import { constants, lstatSync, readlinkSync, type Stats } from 'node:fs';
import { mkdir, open, unlink } from 'node:fs/promises';
import path from 'node:path';

const MAX_LINKS = 40;

/** lstat, or undefined when nothing is there. */
const lstatOrUndefined = (p: string): Stats | undefined => lstatSync(p, { throwIfNoEntry: false });
const split = (p: string) => p.split('/').filter((c) => c !== '' && c !== '.');

/**
 * The host path of `target` inside `root` with every symlink resolved in-root; the last component
 * itself is not a symlink (it may not exist). Missing directories on the way are created (0755,
 * owned by svcd's root = the container's root on an idmapped rootfs) when `createDirs`, else the
 * answer is undefined.
 */
export async function resolveInRoot(root: string, target: string, createDirs: boolean): Promise<string | undefined> {
  let dirs: string[] = [];
  let pending = split(target);
  let links = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '..') {
      dirs.pop();
      continue;
    }
    const host = path.join(root, ...dirs, name);
    const st = lstatOrUndefined(host);
    if (st?.isSymbolicLink()) {
      if (++links > MAX_LINKS) throw new Error(`${target}: too many levels of symbolic links`);
      const link = readlinkSync(host);
      if (link.startsWith('/')) dirs = [];
      pending = [...split(link), ...pending];
      continue;
    }
    if (pending.length === 0) return host;
    if (!st) {
      if (!createDirs) return undefined;
      await mkdir(host, { mode: 0o755 });
    } else if (!st.isDirectory()) throw new Error(`${target}: /${[...dirs, name].join('/')} is not a directory`);
    dirs.push(name);
  }
  throw new Error(`${target}: resolves to the root directory`);
}

/** Does the (resolved) file exist? */
export async function existsInRoot(root: string, target: string): Promise<boolean> {
  const file = await resolveInRoot(root, target, false);
  return !!file && !!lstatOrUndefined(file);
}

/**
 * Replace the content of `target` (created 0644 when new, keeping the mode and owner of an
 * existing file, as LXD does). Anything but a regular file there is refused. A file with other
 * hard links is replaced by a new one (same mode and owner) rather than written in place: a link
 * made in the container to a file it can see through a bind mount must not carry the write there.
 */
export async function writeInRoot(root: string, target: string, content: string | Buffer): Promise<string> {
  const file = (await resolveInRoot(root, target, true))!;
  const before = lstatOrUndefined(file);
  if (before && !before.isFile()) throw new Error(`${target} exists and is not a regular file`);
  if (before && before.nlink > 1) await unlink(file);
  const fresh = !before || before.nlink > 1;
  const fh = await open(
    file,
    constants.O_WRONLY |
      constants.O_CREAT |
      constants.O_NOFOLLOW |
      constants.O_NONBLOCK |
      (fresh ? constants.O_EXCL : constants.O_TRUNC),
    0o644,
  );
  try {
    if (!(await fh.stat()).isFile()) throw new Error(`${target} is not a regular file`);
    if (before && fresh) await fh.chown(before.uid, before.gid);
    await fh.chmod(before ? before.mode & 0o7777 : 0o644);
    await fh.writeFile(content);
  } finally {
    await fh.close();
  }
  return file;
}

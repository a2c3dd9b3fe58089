// @ts-check
// The spawn helper's private copies of programs (see privateCopy). Plain JavaScript, as helper-process.mjs.
import { chmodSync, closeSync, constants, copyFileSync, fstatSync, openSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';

/** @type {Map<string, { fd: number; source: string; stamp: string; path: string }>} */
const copies = new Map();

/**
 * The file at `p` with its stat, or undefined.
 * @param {string} p
 */
const fileAt = (p) => {
  try {
    const st = statSync(p);
    return st.isFile() ? { path: p, st } : undefined;
  } catch {
    return undefined;
  }
};

/**
 * `file` (a program name on PATH) run from an unlinked, read-only, root-only copy that this helper
 * keeps open, exec'd as /proc/<helper>/fd/<n>: `lxc-attach` copies itself into a sealed memfd and
 * executes that again on every start (about 2 ms here), unless it already runs from a memfd or from
 * an unlinked file, which is what the copy is. The self-copy guards the host binary against a
 * container root that is host root (CVE-2019-5736); svcd asks for the copy only for containers whose
 * user namespace does not map host root, whose root cannot write a host-root-owned file anyway.
 * Made again when the program on disk changes (an upgrade); undefined when it cannot be made (the
 * caller then runs `file` itself).
 * @param {string} file
 * @param {string} dir a root-only directory to make the copy in
 * @returns {string | undefined}
 */
export function privateCopy(file, dir) {
  const known = copies.get(file);
  const candidates = file.includes('/') ? [file] : (process.env.PATH ?? '/usr/bin:/bin').split(':').map((d) => path.join(d, file));
  const source = (known && fileAt(known.source)) ?? candidates.map(fileAt).find(Boolean);
  if (!source) return undefined;
  const { st } = source;
  const stamp = `${source.path}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  if (known?.stamp === stamp) return known.path;
  if (known) closeSync(known.fd);
  copies.delete(file);
  const tmp = path.join(dir, `.${path.basename(file)}-${process.pid}-${Date.now()}`);
  // EXCL: never onto anything already there (a symlink included).
  copyFileSync(source.path, tmp, constants.COPYFILE_EXCL);
  let fd;
  try {
    chmodSync(tmp, 0o500);
    fd = openSync(tmp, constants.O_RDONLY | constants.O_NOFOLLOW);
  } finally {
    unlinkSync(tmp);
  }
  if (fstatSync(fd).nlink !== 0) {
    closeSync(fd);
    return undefined;
  }
  const entry = { fd, source: source.path, stamp, path: `/proc/${process.pid}/fd/${fd}` };
  copies.set(file, entry);
  return entry.path;
}

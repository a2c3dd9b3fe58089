/**
 * A container's log directory (`<state>/logs/<project>_<name>/`): list, open, remove plain files
 * directly in it. Nothing here follows a symlink or leaves the directory: names are one path
 * component, the directories are checked with lstat, files are opened with O_NOFOLLOW and must
 * be regular files. Never creates anything.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** One path component: letters, digits, `_`, then also `.`, `-`, `+`; no dot files, no `..`, no `/`. */
export function isLogFileName(name: string): boolean {
  return /^[A-Za-z0-9_][A-Za-z0-9._+-]{0,254}$/.test(name);
}

const gone = (e: unknown) => ['ENOENT', 'ENOTDIR', 'ELOOP'].includes((e as NodeJS.ErrnoException).code ?? '');

/** `<root>/<sub>` when both are real directories (not symlinks); undefined when absent. */
async function realDir(root: string, sub: string): Promise<string | undefined> {
  if (sub === '' || sub === '.' || sub === '..' || /[/\0]/.test(sub)) return undefined;
  const dir = path.join(root, sub);
  for (const p of [root, dir]) {
    const st = await lstat(p).catch((e: unknown) => (gone(e) ? undefined : Promise.reject(e)));
    if (!st?.isDirectory()) return undefined;
  }
  return dir;
}

/** Names of the plain files in `<root>/<sub>`, sorted; none when the directory does not exist. */
export async function listLogFiles(root: string, sub: string): Promise<string[]> {
  const dir = await realDir(root, sub);
  if (!dir) return [];
  const entries = await readdir(dir, { withFileTypes: true }).catch((e: unknown) => (gone(e) ? [] : Promise.reject(e)));
  return entries
    .filter((e) => e.isFile() && isLogFileName(e.name))
    .map((e) => e.name)
    .sort();
}

/** An open handle on a plain file `<root>/<sub>/<name>` and its size; undefined for anything else. */
export async function openLogFile(
  root: string,
  sub: string,
  name: string,
): Promise<{ fh: FileHandle; size: number } | undefined> {
  if (!isLogFileName(name)) return undefined;
  const dir = await realDir(root, sub);
  if (!dir) return undefined;
  // O_NONBLOCK: a FIFO planted here must not hang the request (it is refused below anyway).
  const fh = await open(path.join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (e: unknown) => (gone(e) ? undefined : Promise.reject(e)),
  );
  if (!fh) return undefined;
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    return undefined;
  }
  return { fh, size: st.size };
}

/** Remove the plain file `<root>/<sub>/<name>`; false when there is none (symlinks and others are left alone). */
export async function removeLogFile(root: string, sub: string, name: string): Promise<boolean> {
  if (!isLogFileName(name)) return false;
  const dir = await realDir(root, sub);
  if (!dir) return false;
  const file = path.join(dir, name);
  const st = await lstat(file).catch((e: unknown) => (gone(e) ? undefined : Promise.reject(e)));
  if (!st?.isFile()) return false;
  await unlink(file).catch((e: unknown) => (gone(e) ? undefined : Promise.reject(e)));
  return true;
}

/** Empty the plain file `<root>/<sub>/<name>` in place (a writer with O_APPEND goes on at offset 0); false when there is none. */
export async function truncateLogFile(root: string, sub: string, name: string): Promise<boolean> {
  if (!isLogFileName(name)) return false;
  const dir = await realDir(root, sub);
  if (!dir) return false;
  const fh = await open(path.join(dir, name), constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (e: unknown) => (gone(e) ? undefined : Promise.reject(e)),
  );
  if (!fh) return false;
  try {
    if (!(await fh.stat()).isFile()) return false;
    await fh.truncate(0);
    return true;
  } finally {
    await fh.close();
  }
}

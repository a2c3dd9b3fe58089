import fs from 'node:fs';
import { fdPath, resolveParent, type Resolved } from './resolve-in-root.ts';
import type { ContainerFs, FileView } from './views.ts';

/**
 * Where to create an entry in the directory `r.dir`: there, unless that is behind an idmapped
 * mount (the kernel refuses host root creating there), then in the host directory behind that
 * mount: the directory's path in the container (the kernel's name for the fd) made relative to
 * the mount, resolved in-root in the host directory, and used only when it is the very same
 * directory (device and inode). Otherwise still `r.dir` (a mount that is not idmapped accepts host ids).
 */
export function creationDir(fsys: ContainerFs, r: Resolved): { view: FileView; dir: number; close(): void } {
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
  const candidates = fsys.create
    .filter((c) => under(c.mountPath))
    .sort((a, b) => b.mountPath.length - a.mountPath.length);
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

/** Remove a temporary entry made in a creation directory, if it is there. */
export function unlinkQuietly(p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    /* never made, or already gone */
  }
}

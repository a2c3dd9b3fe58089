/** Owner and mode of an entry, always as the container sees them (views.ts). */
import fs from 'node:fs';
import { HostInputError } from '../errors.ts';
import { unsupported } from './file-errors.ts';
import { lstatFinal, type Resolved } from './resolve-in-root.ts';
import { toInside, toView, type ContainerFs, type FileView } from './views.ts';

export interface Owner {
  uid: number;
  gid: number;
  /** Permission bits (07777). */
  mode: number;
}

export interface WriteRequest {
  uid?: number | undefined;
  gid?: number | undefined;
  mode?: number | undefined;
}

export function ownerOf(view: FileView, st: fs.Stats): Owner {
  return { uid: toInside(view, 'uid', st.uid), gid: toInside(view, 'gid', st.gid), mode: st.mode & 0o7777 };
}

/** What a write leaves: the request's owner and mode, else the old entry's, else uid/gid 0 and `mode`. */
export function ownerFor(req: WriteRequest, old: Owner | undefined, mode: number): Owner {
  return { uid: req.uid ?? old?.uid ?? 0, gid: req.gid ?? old?.gid ?? 0, mode: req.mode ?? old?.mode ?? mode };
}

/** Whether the request names an owner or a mode. */
export const ownerGiven = (req: WriteRequest) =>
  req.uid !== undefined || req.gid !== undefined || req.mode !== undefined;

export function applyOwner(view: FileView, fd: number, o: Owner): void {
  fs.fchownSync(fd, toView(view, 'uid', o.uid), toView(view, 'gid', o.gid));
  fs.fchmodSync(fd, o.mode);
}

/** Check a target's final component as the owner a write keeps; undefined when absent. */
export function existingOwner(
  fsys: ContainerFs,
  r: Resolved,
  path: string,
  want: 'file' | 'directory' | 'symlink',
): Owner | undefined {
  const st = lstatFinal(r, path, fsys.main.guard);
  if (!st) return undefined;
  const is = st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'other';
  if (is !== want) {
    if (is === 'directory') throw new HostInputError(`Path "${path}" is a directory`);
    if (is === 'symlink')
      throw new HostInputError(`Path "${path}" is a symlink: delete it first (writes never go through a symlink)`);
    if (is === 'other') throw unsupported(path);
    throw new HostInputError(`Path "${path}" already exists and is a ${is}`);
  }
  return ownerOf(fsys.main, st);
}

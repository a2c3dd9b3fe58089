/**
 * /proc/self/mountinfo: parsed purely, read without spawning a process.
 * Line format (proc(5)): `id parent major:minor root mount-point options [optional...] - fstype source super-options`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface MountEntry {
  id: number;
  parentId: number;
  major: number;
  minor: number;
  /** Path inside the filesystem that is mounted here (`/` or, for a bind mount or subvolume, a subpath). */
  root: string;
  mountPoint: string;
  /** Per-mount options (`rw`, `relatime`, ...). */
  options: string[];
  /** Optional fields such as `shared:1`, `master:2`. */
  optionalFields: string[];
  fsType: string;
  /** Device or pseudo source (`/dev/loop0`, `tmpfs`, ...). */
  source: string;
  /** Per-superblock options (`prjquota`, `user_subvol_rm_allowed`, `subvol=/x`, ...). */
  superOptions: string[];
}

/** Undo the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash). */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

function splitOptions(text: string): string[] {
  return text === '' ? [] : text.split(',');
}

/** Parse one mountinfo line; undefined for a blank or malformed line. */
export function parseMountinfoLine(line: string): MountEntry | undefined {
  const fields = line.trim().split(' ');
  const sep = fields.indexOf('-', 6);
  if (fields.length < 10 || sep < 0 || fields.length < sep + 3) return undefined;
  const [id, parentId, devno, root, mountPoint, options] = fields;
  const dev = /^(\d+):(\d+)$/.exec(devno ?? '');
  if (!dev || !/^\d+$/.test(id ?? '') || !/^\d+$/.test(parentId ?? '')) return undefined;
  return {
    id: Number(id),
    parentId: Number(parentId),
    major: Number(dev[1]),
    minor: Number(dev[2]),
    root: unescapeMountField(root ?? ''),
    mountPoint: unescapeMountField(mountPoint ?? ''),
    options: splitOptions(options ?? ''),
    optionalFields: fields.slice(6, sep),
    fsType: unescapeMountField(fields[sep + 1] ?? ''),
    source: unescapeMountField(fields[sep + 2] ?? ''),
    superOptions: splitOptions(fields.slice(sep + 3).join(' ')),
  };
}

/** Parse the whole of /proc/self/mountinfo, in kernel order (later entries are mounted on top of earlier ones). */
export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const entry = parseMountinfoLine(line);
    if (entry) out.push(entry);
  }
  return out;
}

/**
 * Current mounts of this process's mount namespace (a file read, no process spawned). Read in place: the kernel
 * makes the text on the read (no disk), and the promise form took four thread-pool trips for it.
 */
export async function readMounts(file = '/proc/self/mountinfo'): Promise<MountEntry[]> {
  return parseMountinfo(readFileSync(file, 'utf8'));
}

function contains(mountPoint: string, p: string): boolean {
  return mountPoint === '/' || p === mountPoint || p.startsWith(`${mountPoint}/`);
}

/**
 * The mount a path lives on: the longest mount point that is a prefix of the path (the topmost one when
 * several are stacked). The path is normalised but not resolved: pass a realpath if symlinks may be involved.
 */
export function findMount(mounts: readonly MountEntry[], p: string): MountEntry | undefined {
  const target = path.resolve(p);
  let best: MountEntry | undefined;
  for (const m of mounts) {
    if (!contains(m.mountPoint, target)) continue;
    if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
  }
  return best;
}

/** The topmost mount whose mount point is exactly this path, if any. */
export function mountAt(mounts: readonly MountEntry[], p: string): MountEntry | undefined {
  const target = path.resolve(p);
  return mounts.findLast((m) => m.mountPoint === target);
}

/** Is something mounted exactly at this path? */
export function isMountPoint(mounts: readonly MountEntry[], p: string): boolean {
  return mountAt(mounts, p) !== undefined;
}

/** Is this option set, either per mount or per superblock? (`prjquota`, `pquota`, ...) */
export function hasMountOption(m: MountEntry, option: string): boolean {
  return m.options.includes(option) || m.superOptions.includes(option);
}

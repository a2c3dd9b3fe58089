/**
 * The two host views of a container's files, and the ids each shows:
 *
 * - its root filesystem directory on the storage pool: for a stopped container, or to create
 *   entries in a running unprivileged one (below). The rootfs is idmapped only at mount time
 *   (`lxc.rootfs.options = idmap=container`), so on disk the ids are the container's own, for
 *   privileged and unprivileged containers alike: no translation.
 * - `/proc/<init pid>/root` of a running container: its mount namespace, so what is mounted inside
 *   (tmpfs, /proc, disk devices) is what the container sees. Through it the files of an
 *   unprivileged container show host ids (the idmapped mount maps container 0 to host 1000000...),
 *   translated with the init process's own uid_map/gid_map. And the kernel refuses to create an
 *   entry through an idmapped mount as host root (EOVERFLOW: host uid 0 is not in the mount's
 *   idmap), so new entries in a directory behind one (the rootfs, custom volumes) are made through
 *   the host directory behind that mount (same directory, checked by device and inode), with the
 *   container's ids, which is what such directories hold on disk.
 */
import fs from 'node:fs';
import type { Range } from '../idmap/types.ts';
import { HostInputError } from '../errors.ts';
import { parseMountinfo, unescapeMountField } from '../storage/mountinfo.ts';
import { fdPath, openRoot, type Guard } from './resolve-in-root.ts';

export type IdKind = 'uid' | 'gid';

/** One view of the files: an O_PATH fd on its root, and the ids it shows (nsid→hostid ranges; none = the container's own). */
export interface FileView {
  root: number;
  map?: { uid: Range[]; gid: Range[] } | undefined;
  /** Refuses fds on file systems the API must not touch (see pseudoFsGuard). */
  guard?: Guard | undefined;
  /** Without `map`: the container's ids (nsid ranges) when it is unprivileged, to refuse ids it does not map. */
  mapped?: { uid: Range[]; gid: Range[] } | undefined;
}

/** A host directory whose files appear idmapped at `mountPath` in the container (its rootfs at `/`, idmapped disks). */
export interface IdmappedSource {
  mountPath: string;
  source: string;
}

export interface ContainerFs {
  /** Where paths are resolved and read. */
  main: FileView;
  /**
   * Where new entries are created when `main` cannot: the host directories behind the container's
   * idmapped mounts (the kernel refuses host root creating through an idmapped mount), with the
   * container path each is mounted at. On disk they hold the container's own ids.
   */
  create?: (FileView & { mountPath: string })[] | undefined;
  close(): void;
}

/** The overflow id the kernel shows for ids a namespace does not map. */
export const OVERFLOW_ID = 65534;

/** The container's id for an id this view shows. */
export function toInside(view: FileView, kind: IdKind, id: number): number {
  if (!view.map) return id;
  const r = view.map[kind].find((x) => id >= x.hostid && id < x.hostid + x.count);
  return r ? r.nsid + (id - r.hostid) : OVERFLOW_ID;
}

/** The id this view needs for a container id; a HostInputError when the container does not map it. */
export function toView(view: FileView, kind: IdKind, id: number): number {
  const ranges = view.map?.[kind] ?? view.mapped?.[kind];
  if (!ranges) return id;
  const r = ranges.find((x) => id >= x.nsid && id < x.nsid + x.count);
  if (!r)
    throw new HostInputError(
      `${kind} ${id} is not mapped in the container (its ${kind} map covers ${ranges.map((x) => `${x.nsid}-${x.nsid + x.count - 1}`).join(', ')})`,
    );
  return view.map ? r.hostid + (id - r.nsid) : id;
}

/**
 * The host directories mounted idmapped into an unprivileged container, from its LXC config: the
 * rootfs (`lxc.rootfs.options = idmap=container`) at `/`, and `lxc.mount.entry` lines with
 * `idmap=container` (custom volumes, `shift=true` disks).
 */
export function idmappedSources(config: string, rootfs: string | undefined): IdmappedSource[] {
  const out: IdmappedSource[] = [];
  if (rootfs && /^lxc\.rootfs\.options\s*=.*\bidmap=container\b/m.test(config))
    out.push({ mountPath: '/', source: rootfs });
  for (const m of config.matchAll(/^lxc\.mount\.entry\s*=\s*(\S+)\s+(\S+)\s+\S+\s+(\S+)/gm)) {
    if (!m[3]!.split(',').includes('idmap=container')) continue;
    const target = unescapeMountField(m[2]!).replace(/^\/+|\/+$/g, '');
    if (target === '' || target.split('/').includes('..')) continue;
    out.push({ mountPath: `/${target}`, source: unescapeMountField(m[1]!) });
  }
  return out;
}

/** The `lxc.idmap` lines of a container's LXC config; undefined when it has none (privileged). */
export function parseLxcIdmap(config: string): { uid: Range[]; gid: Range[] } | undefined {
  const out = { uid: [] as Range[], gid: [] as Range[] };
  for (const m of config.matchAll(/^lxc\.idmap\s*=\s*([ug])\s+(\d+)\s+(\d+)\s+(\d+)\s*$/gm))
    out[m[1] === 'u' ? 'uid' : 'gid'].push({ nsid: Number(m[2]), hostid: Number(m[3]), count: Number(m[4]) });
  return out.uid.length || out.gid.length ? out : undefined;
}

/** `/proc/<pid>/uid_map` text → ranges; undefined for the identity map of the initial namespace (privileged). */
export function parseIdMap(text: string): Range[] | undefined {
  const ranges = text
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((f) => f.length === 3 && f.every((n) => Number.isSafeInteger(n)))
    .map(([nsid, hostid, count]) => ({ nsid: nsid!, hostid: hostid!, count: count! }));
  if (ranges.length === 1 && ranges[0]!.nsid === 0 && ranges[0]!.hostid === 0 && ranges[0]!.count === 4294967295)
    return undefined;
  return ranges;
}

/**
 * File systems of a running container the API refuses to enter: kernel pseudo file systems, whose
 * files read or written by svcd (host root, all capabilities) could expose or change the host
 * (`/proc/kcore`, sysfs, cgroup files) beyond what the container itself may; and FUSE, served by a
 * process (maybe the container's) that could stall svcd on every call.
 */
const REFUSED_FS =
  /^(proc|sysfs|cgroup2?|debugfs|tracefs|securityfs|bpf|configfs|efivarfs|pstore|fusectl|binfmt_misc|autofs|fuse|fuseblk|fuse\..+)$/;

/** The mount id an fd is on, from /proc/self/fdinfo (which asks nothing of that file system). */
function mountIdOf(fd: number): number | undefined {
  const m = /^mnt_id:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  return m ? Number(m[1]) : undefined;
}

/** A guard refusing fds on the REFUSED_FS mounts of a mount namespace (its mountinfo text). */
export function pseudoFsGuard(mountinfo: string): Guard {
  const refused = new Map<number, { fsType: string; mountPoint: string }>();
  for (const m of parseMountinfo(mountinfo)) if (REFUSED_FS.test(m.fsType)) refused.set(m.id, m);
  return (fd, p) => {
    const id = mountIdOf(fd);
    const m = id === undefined ? undefined : refused.get(id);
    if (m)
      throw new HostInputError(
        `Path "${p}" is on a ${m.fsType} file system (${m.mountPoint} in the container): the file API serves regular file systems only`,
      );
  };
}

const closeQuietly = (fd: number | undefined) => {
  if (fd !== undefined) {
    try {
      fs.closeSync(fd);
    } catch {
      /* already closed */
    }
  }
};

/** The stopped container's view: its rootfs directory on the host; `mapped` from its LXC config when unprivileged. */
export function openRootfsView(rootfs: string, mapped?: { uid: Range[]; gid: Range[] }): ContainerFs {
  const root = openRoot(rootfs);
  return { main: { root, mapped }, close: () => closeQuietly(root) };
}

/**
 * The running container's view through its init process, when `pid` still is that process: the
 * `/proc/<pid>` directory is opened first and everything else is read through that fd, so a pid
 * reused by another process after the container stopped fails (ESRCH) instead of naming it; its
 * cgroup must be the container's (LXC names it after `lxcName`). Undefined when it is not (anymore).
 */
export function openProcView(
  pid: number,
  lxcName: string,
  sources: readonly IdmappedSource[],
): ContainerFs | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 1) return undefined;
  let procDir: number | undefined;
  const fds: number[] = [];
  try {
    procDir = fs.openSync(`/proc/${pid}`, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    const cgroup = fs.readFileSync(fdPath(procDir, 'cgroup'), 'utf8');
    if (!cgroup.split('\n').some((l) => l.split('/').some((seg) => seg === lxcName || seg.endsWith(`.${lxcName}`))))
      return undefined;
    const guard = pseudoFsGuard(fs.readFileSync(fdPath(procDir, 'mountinfo'), 'utf8'));
    const uid = parseIdMap(fs.readFileSync(fdPath(procDir, 'uid_map'), 'utf8'));
    const gid = parseIdMap(fs.readFileSync(fdPath(procDir, 'gid_map'), 'utf8'));
    const root = openRoot(fdPath(procDir, 'root'));
    fds.push(root);
    const map =
      uid || gid
        ? {
            uid: uid ?? [{ nsid: 0, hostid: 0, count: 4294967295 }],
            gid: gid ?? [{ nsid: 0, hostid: 0, count: 4294967295 }],
          }
        : undefined;
    const create: (FileView & { mountPath: string })[] = [];
    for (const s of map ? sources : []) {
      let fd: number;
      try {
        fd = openRoot(s.source);
      } catch {
        continue; // gone or not a directory: that mount just cannot be created on
      }
      fds.push(fd);
      create.push({ root: fd, mapped: map, mountPath: s.mountPath });
    }
    const owned = fds.splice(0);
    return { main: { root, map, guard }, create, close: () => owned.forEach(closeQuietly) };
  } catch (e) {
    const c = (e as NodeJS.ErrnoException).code;
    if (c === 'ENOENT' || c === 'ESRCH') return undefined;
    throw e;
  } finally {
    closeQuietly(procDir);
    fds.forEach(closeQuietly);
  }
}

/** Pure parsers for locating a container's cgroup (/proc/<pid>/cgroup, mountinfo) and reading its files. */
import path from 'node:path';
import type { MountEntry } from '../storage/mountinfo.ts';

/** Where a process sits: per v1 controller (`memory` → `/lxc.payload.c1`) and in the unified hierarchy. */
export interface ProcCgroups {
  v1: Map<string, string>;
  v2?: string;
}

/** Parse /proc/<pid>/cgroup (`id:controller[,controller]:path` lines; `0::path` is the unified hierarchy). */
export function parseProcCgroup(text: string): ProcCgroups {
  const out: ProcCgroups = { v1: new Map() };
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, id, controllers, p] = m as unknown as [string, string, string, string];
    if (id === '0' && controllers === '') out.v2 = p;
    else for (const c of controllers.split(',')) if (c) out.v1.set(c, p);
  }
  return out;
}

/** A cgroup filesystem mount: where it is and which cgroup path its root is (not `/` inside a cgroup namespace). */
export interface CgroupMount {
  mountPoint: string;
  root: string;
}

/** cgroup hierarchies mounted on this host, from mountinfo: v1 per controller (or `name=`), and the cgroup2 mount. */
export interface CgroupMounts {
  v1: Map<string, CgroupMount>;
  v2?: CgroupMount;
}

export function cgroupMountsFrom(mounts: readonly MountEntry[]): CgroupMounts {
  const out: CgroupMounts = { v1: new Map() };
  for (const m of mounts) {
    const at = { mountPoint: m.mountPoint, root: m.root };
    if (m.fsType === 'cgroup2') out.v2 ??= at;
    else if (m.fsType === 'cgroup') {
      // controllers, and named hierarchies as /proc/<pid>/cgroup spells them (`name=systemd`)
      for (const opt of m.superOptions) {
        if (opt === 'rw' || opt === 'ro' || (opt.includes('=') && !opt.startsWith('name=')) || out.v1.has(opt))
          continue;
        out.v1.set(opt, at);
      }
    }
  }
  return out;
}

/**
 * The container's own cgroup from init's: LXC puts a container in `…/lxc.payload.<name>`, and an init such
 * as systemd moves itself into a child (`…/init.scope`), which would undercount. Cut after the first
 * `lxc.payload.*` segment; other layouts are used as they are.
 */
export function containerCgroupPath(initPath: string): string {
  const parts = initPath.split('/');
  const i = parts.findIndex((p) => p.startsWith('lxc.payload.'));
  return i < 0 ? initPath : parts.slice(0, i + 1).join('/');
}

/** The directory of cgroup `cgPath` under a mount whose root is `mount.root`; undefined when outside it. */
export function cgroupDir(mount: CgroupMount, cgPath: string): string | undefined {
  const rel = path.posix.relative(mount.root, cgPath);
  if (rel.startsWith('..')) return undefined;
  return path.join(mount.mountPoint, rel);
}

/** A flat-keyed cgroup file (`cpu.stat`, `memory.stat`): `key value` lines. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

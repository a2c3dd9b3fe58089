/**
 * A container's state read from the host's own records, spawning nothing (an `lxc-info` costs 5–10 ms of
 * process start-up, and start, exec and the observer ask often):
 *  - LXC's monitor (`lxc-start`) listens on the abstract socket `@<lxcpath>/<name>/command` from the start of
 *    a run to its end; that is the socket lxc-info asks, and no listener there is what lxc-info reports as
 *    STOPPED. The kernel lists listening sockets in /proc/net/unix.
 *  - While the monitor runs, init is the task of the container's cgroup (`lxc.payload.<name>` under the
 *    monitor's own cgroup) whose innermost pid is 1, and the freezer says whether it is frozen.
 * Only what these records settle is answered: STOPPED needs both the socket and the cgroup gone; RUNNING or
 * FROZEN need the socket, init and a settled freezer. Anything else (starting, stopping, freezing, a hashed
 * socket name for a long path, an unfamiliar cgroup layout) is undefined, and the caller asks lxc-info.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readMounts } from '../storage/mountinfo.ts';
import type { ContainerState, LxcRef } from './lxc-args.ts';
import { cgroupDir, cgroupMountsFrom, parseProcCgroup } from './parse-cgroup.ts';
import { CGROUP_V1 } from './cgroup-files.ts';

/** sun_path is 108 bytes; LXC hashes the name when `\0<lxcpath>/<name>/command` does not fit. */
const SUN_PATH_MAX = 108;
/** Tasks examined for init before giving up (init is nearly always among the first). */
const MAX_TASKS = 32;

export interface HostStateSources {
  /** /proc/net/unix of the monitor's network namespace (svcd's own: it starts the monitors). */
  unixSockets(): Promise<string>;
  /** The container's cgroup directory in the hierarchy that holds the freezer, undefined if unknown here. */
  cgroupDir(name: string): Promise<{ dir: string; freezer: 'v1' | 'v2' } | undefined>;
  readFile(file: string): Promise<string | undefined>;
  exists(p: string): Promise<boolean>;
  /** Whether a cgroup directory has no process of its own and no child cgroup (false when it cannot be read). */
  emptyCgroup(dir: string): Promise<boolean>;
}

/** The abstract name LXC's monitor listens on, or undefined when LXC would use a hashed one. */
export function commandSocketName(ref: LxcRef): string | undefined {
  const name = `${ref.lxcPath.replace(/\/+$/, '')}/${ref.name}/command`;
  return Buffer.byteLength(name) + 1 < SUN_PATH_MAX && !/\s/.test(name) ? `@${name}` : undefined;
}

/** Whether /proc/net/unix (`Num RefCount Protocol Flags Type St Inode Path`) lists `socketName` as listening. */
export function isListening(procNetUnix: string, socketName: string): boolean {
  for (const line of procNetUnix.split('\n')) {
    if (!line.endsWith(socketName)) continue;
    const f = line.trim().split(/\s+/);
    // Flags 00010000 is __SO_ACCEPTCON: a listening socket.
    if (f.length >= 8 && f[7] === socketName && (parseInt(f[3]!, 16) & 0x10000) !== 0) return true;
  }
  return false;
}

/** The innermost pid of a /proc/<pid>/status (`NSpid: 4242 1`). */
export function innermostPid(status: string): number | undefined {
  const m = /^NSpid:\s*([\d\s]+)$/m.exec(status);
  const last = m?.[1]?.trim().split(/\s+/).pop();
  return last !== undefined && /^\d+$/.test(last) ? Number(last) : undefined;
}

/**
 * `monitorStarted`: `lxc-start -d` has just returned success, so its monitor runs and the socket is not
 * looked for (/proc/net/unix grows with every running container: 0.7 ms a read with 200 running).
 * Init found in the container's cgroup still decides RUNNING; anything less is undefined as ever.
 */
export async function readHostState(
  ref: LxcRef & { monitorStarted?: boolean; listening?: ReadonlySet<string> },
  src: HostStateSources = defaultSources,
): Promise<ContainerState | undefined> {
  const socket = commandSocketName(ref);
  if (!socket) return undefined;
  const cg = await src.cgroupDir(ref.name);
  if (!cg) return undefined;
  // `ref.listening`: the listening sockets a caller looking at many containers read once (host-states.ts).
  const listening =
    ref.monitorStarted || (ref.listening ? ref.listening.has(socket) : isListening(await src.unixSockets(), socket));
  if (!listening) {
    if (!(await src.exists(cg.dir))) return { state: 'STOPPED' };
    // The cgroup outlives a run by a moment (LXC removes it after the monitor exited): with no process and no
    // child cgroup in it, nothing runs there. (A monitor gone while the container's processes live on, or
    // listening in another network namespace, leaves processes: undefined, and lxc-info is asked.)
    return (await src.emptyCgroup(cg.dir)) ? { state: 'STOPPED' } : undefined;
  }
  const procs = await src.readFile(path.join(cg.dir, 'cgroup.procs'));
  if (procs === undefined) return undefined;
  let pid: number | undefined;
  for (const p of procs.split('\n').filter(Boolean).slice(0, MAX_TASKS)) {
    const status = await src.readFile(`/proc/${p}/status`);
    if (status !== undefined && innermostPid(status) === 1) {
      pid = Number(p);
      break;
    }
  }
  if (pid === undefined) return undefined;
  if (cg.freezer === 'v1') {
    const f = (await src.readFile(path.join(cg.dir, CGROUP_V1.freezerState)))?.trim();
    if (f === 'THAWED') return { state: 'RUNNING', pid };
    if (f === 'FROZEN') return { state: 'FROZEN', pid };
    return undefined;
  }
  const events = await src.readFile(path.join(cg.dir, 'cgroup.events'));
  const frozen = events && /^frozen\s+([01])$/m.exec(events)?.[1];
  if (frozen === '0') return { state: 'RUNNING', pid };
  if (frozen === '1') return { state: 'FROZEN', pid };
  return undefined;
}

/** Where this process's children's cgroups live: the freezer's hierarchy (v1, else cgroup2) and our place in it. */
let base: Promise<{ dir: string; freezer: 'v1' | 'v2' } | undefined> | undefined;
function monitorBase() {
  base ??= (async () => {
    const mounts = cgroupMountsFrom(await readMounts());
    const own = parseProcCgroup(await readFile('/proc/self/cgroup', 'utf8'));
    const v1 = mounts.v1.get('freezer');
    const v1Path = own.v1.get('freezer');
    if (v1 && v1Path !== undefined) {
      const dir = cgroupDir(v1, v1Path);
      return dir ? { dir, freezer: 'v1' as const } : undefined;
    }
    if (mounts.v2 && own.v2 !== undefined) {
      const dir = cgroupDir(mounts.v2, own.v2);
      return dir ? { dir, freezer: 'v2' as const } : undefined;
    }
    return undefined;
  })().catch(() => undefined);
  return base;
}

/** procfs and cgroupfs are generated in memory: read synchronously (~20 µs each, no thread-pool round trip). */
function readSync(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

export const defaultSources: HostStateSources = {
  unixSockets: async () => readSync('/proc/net/unix') ?? '',
  async cgroupDir(name) {
    const b = await monitorBase();
    return b && { dir: path.join(b.dir, `lxc.payload.${name}`), freezer: b.freezer };
  },
  readFile: async (file) => readSync(file),
  exists: async (p) => existsSync(p),
  async emptyCgroup(dir) {
    if (readSync(path.join(dir, 'cgroup.procs')) !== '') return false;
    try {
      return readdirSync(dir, { withFileTypes: true }).every((e) => !e.isDirectory());
    } catch {
      return false;
    }
  },
};

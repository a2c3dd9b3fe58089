/**
 * Resource usage of a running container, read from the cgroup filesystem without spawning anything:
 * init's pid → /proc/<pid>/cgroup → the container's cgroup → the controller files. Works on v1, unified
 * (v2) and hybrid hosts: a v1 controller is used when mounted, the cgroup2 file otherwise.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { MountEntry } from '../storage/mountinfo.ts';
import { cgroupMounts } from './live-cgroup.ts';
import {
  cgroupDir,
  cgroupMountsFrom,
  containerCgroupPath,
  parseFlatKeyed,
  parseProcCgroup,
  type CgroupMounts,
  type ProcCgroups,
} from './parse-cgroup.ts';
import { CGROUP_V1, CGROUP_V2 } from './cgroup-files.ts';

export interface CgroupStats {
  /** CPU time used by all tasks, in ns (a JS number: exact up to ~104 CPU-days). */
  cpuUsageNs?: number;
  memoryUsage?: number;
  /** Highest memory usage seen (v1 max_usage_in_bytes; v2 memory.peak, Linux 5.19+). */
  memoryPeak?: number;
  swapUsage?: number;
  /** Tasks in the container (pids.current, or counted from cgroup.procs without a pids controller). */
  processes?: number;
}

export interface ReadCgroupStatsInput {
  /** The container's init pid (`containerState().pid`). */
  pid: number;
  /** For tests: where proc is (default /proc). */
  procRoot?: string;
  /** For tests: the mount table (default this process's mountinfo). */
  mounts?: readonly MountEntry[];
}

/** cgroupfs and procfs are generated in memory: read synchronously (no thread-pool round trip for each file). */
const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

const readNumber = async (file: string): Promise<number | undefined> => {
  const text = readText(file);
  const v = text?.trim();
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
};

/** Count tasks in a cgroup and its children from cgroup.procs (slower fallback). */
async function countProcs(dir: string): Promise<number | undefined> {
  const procs = readText(path.join(dir, 'cgroup.procs'));
  if (procs === undefined) return undefined;
  let n = procs.split('\n').filter(Boolean).length;
  let entries: { isDirectory(): boolean; name: string }[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    // gone meanwhile: no more processes there
  }
  for (const e of entries) {
    if (e.isDirectory()) n += (await countProcs(path.join(dir, e.name))) ?? 0;
  }
  return n;
}

/** The container's directory for a v1 controller, or for the unified hierarchy (`controller` undefined). */
function dirFor(mounts: CgroupMounts, proc: ProcCgroups, controller?: string): string | undefined {
  if (controller === undefined) {
    return mounts.v2 && proc.v2 !== undefined ? cgroupDir(mounts.v2, containerCgroupPath(proc.v2)) : undefined;
  }
  const mount = mounts.v1.get(controller);
  const p = proc.v1.get(controller);
  return mount && p !== undefined ? cgroupDir(mount, containerCgroupPath(p)) : undefined;
}

/** Read the container's cgroup counters; a counter the host does not provide is left out. Rejects if the pid is gone. */
export async function readCgroupStats(input: ReadCgroupStatsInput): Promise<CgroupStats> {
  const procRoot = input.procRoot ?? '/proc';
  const proc = parseProcCgroup(readFileSync(path.join(procRoot, String(input.pid), 'cgroup'), 'utf8'));
  // The hierarchies do not move while svcd runs: the mount table read once (live-cgroup.ts).
  const mounts = input.mounts ? cgroupMountsFrom(input.mounts) : await cgroupMounts();
  const v2 = dirFor(mounts, proc);
  const stats: CgroupStats = {};

  const cpuacct = dirFor(mounts, proc, 'cpuacct');
  stats.cpuUsageNs = cpuacct ? await readNumber(path.join(cpuacct, CGROUP_V1.cpuUsage)) : undefined;
  if (stats.cpuUsageNs === undefined && v2) {
    const usec = parseFlatKeyed(readText(path.join(v2, CGROUP_V2.cpuStat)) ?? '').get('usage_usec');
    if (usec !== undefined) stats.cpuUsageNs = usec * 1000;
  }

  const memory = dirFor(mounts, proc, 'memory');
  if (memory) {
    stats.memoryUsage = await readNumber(path.join(memory, CGROUP_V1.memoryUsage));
    stats.memoryPeak = await readNumber(path.join(memory, CGROUP_V1.memoryPeak));
    const memsw = await readNumber(path.join(memory, CGROUP_V1.memswUsage));
    if (memsw !== undefined && stats.memoryUsage !== undefined)
      stats.swapUsage = Math.max(0, memsw - stats.memoryUsage);
  } else if (v2) {
    stats.memoryUsage = await readNumber(path.join(v2, CGROUP_V2.memoryUsage));
    stats.memoryPeak = await readNumber(path.join(v2, CGROUP_V2.memoryPeak));
    stats.swapUsage = await readNumber(path.join(v2, CGROUP_V2.swapUsage));
  }

  const pids = dirFor(mounts, proc, 'pids') ?? v2;
  stats.processes = pids ? await readNumber(path.join(pids, CGROUP_V1.pidsCurrent)) : undefined;
  if (stats.processes === undefined) {
    const dir = v2 ?? memory ?? cpuacct;
    stats.processes = dir ? await countProcs(dir) : undefined;
  }

  return Object.fromEntries(Object.entries(stats).filter(([, v]) => v !== undefined)) as CgroupStats;
}

/**
 * Reads server resources from /proc and /sys (file reads only, no processes).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { computeCpu, computeMemory } from './compute-resources.ts';
import type { CpuResources, CpuSysFacts, MemoryResources, ServerResources } from './compute-resources.ts';
import { parseCpuinfo } from './parse-cpuinfo.ts';
import { parseCpuList } from './parse-cpu-list.ts';
import { parseMeminfo } from './parse-meminfo.ts';

export type { CpuResources, CpuSocket, MemoryResources, ServerResources } from './compute-resources.ts';

export interface ReadResourcesOptions {
  /** Filesystem root holding proc/ and sys/; default "/". */
  root?: string;
}

/** At most this many CPUs' /sys files are read concurrently (keeps fd use bounded on huge hosts). */
const SYS_READ_CONCURRENCY = 16;

/**
 * Error codes meaning "this optional file is not there / not usable"; anything
 * else (EMFILE, ENOMEM, ...) is a real failure and propagates.
 */
const ABSENT_CODES = new Set([
  'ENOENT',
  'ENOTDIR',
  'ENODEV',
  'ENXIO',
  'EINVAL',
  'EACCES',
  'EPERM',
  'EIO',
  'EBUSY',
  'EAGAIN',
]);

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (code !== undefined && ABSENT_CODES.has(code)) return undefined;
    throw err;
  }
}

async function readOptionalInt(file: string): Promise<number | undefined> {
  const text = await readOptional(file);
  if (text === undefined) return undefined;
  const v = text.trim();
  return /^-?\d+$/.test(v) ? Number(v) : undefined;
}

async function readCpuSysFacts(cpuDir: string): Promise<CpuSysFacts> {
  const topology = path.join(cpuDir, 'topology');
  const cpufreq = path.join(cpuDir, 'cpufreq');
  const [physicalPackageId, dieId, clusterId, coreId, curFreqKhz, maxFreqKhz] = await Promise.all([
    readOptionalInt(path.join(topology, 'physical_package_id')),
    readOptionalInt(path.join(topology, 'die_id')),
    readOptionalInt(path.join(topology, 'cluster_id')),
    readOptionalInt(path.join(topology, 'core_id')),
    readOptionalInt(path.join(cpufreq, 'scaling_cur_freq')),
    readOptionalInt(path.join(cpufreq, 'cpuinfo_max_freq')),
  ]);
  return { physicalPackageId, dieId, clusterId, coreId, curFreqKhz, maxFreqKhz };
}

/** CPU part: /proc/cpuinfo (required), /sys/devices/system/cpu/{online,cpuN/topology,cpuN/cpufreq} (optional). */
export async function readCpuResources(opts: ReadResourcesOptions = {}): Promise<CpuResources> {
  const root = opts.root ?? '/';
  const cpuRoot = path.join(root, 'sys', 'devices', 'system', 'cpu');

  const [cpuinfoText, onlineText] = await Promise.all([
    readFile(path.join(root, 'proc', 'cpuinfo'), 'utf8'),
    readOptional(path.join(cpuRoot, 'online')),
  ]);
  const cpuinfo = parseCpuinfo(cpuinfoText);
  const online = onlineText === undefined ? undefined : parseCpuList(onlineText);
  const ids = online ?? cpuinfo.processors.map((p) => p.processor);

  const sys = new Map<number, CpuSysFacts>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++]!;
      sys.set(id, await readCpuSysFacts(path.join(cpuRoot, `cpu${id}`)));
    }
  };
  await Promise.all(Array.from({ length: Math.min(SYS_READ_CONCURRENCY, ids.length) }, worker));

  return computeCpu({ cpuinfo, online, sys });
}

/** Memory part: /proc/meminfo (required). */
export async function readMemoryResources(opts: ReadResourcesOptions = {}): Promise<MemoryResources> {
  const root = opts.root ?? '/';
  return computeMemory(parseMeminfo(await readFile(path.join(root, 'proc', 'meminfo'), 'utf8')));
}

/** Everything `GET /1.0/resources` returns. */
export async function readResources(opts: ReadResourcesOptions = {}): Promise<ServerResources> {
  const [cpu, memory] = await Promise.all([readCpuResources(opts), readMemoryResources(opts)]);
  return { cpu, memory };
}

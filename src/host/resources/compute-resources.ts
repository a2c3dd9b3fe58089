/**
 * Pure combination of parsed /proc and /sys facts into the
 * `GET /1.0/resources` object (shape of LXD's original `resources` API
 * extension).
 */
import type { ParsedCpuinfo } from './parse-cpuinfo.ts';
import type { Meminfo } from './parse-meminfo.ts';

/** One physical CPU package. All numbers are integers. */
export interface CpuSocket {
  /** Distinct physical cores (core_id) with at least one online thread in this socket. */
  cores: number;
  /** Current clock in MHz (mean over the socket's online threads), 0 when unknown. */
  frequency: number;
  /** Maximum clock in MHz (cpuinfo_max_freq), 0 when unknown. */
  frequency_turbo: number;
  name: string;
  vendor: string;
  /** Online logical CPUs in this socket. */
  threads: number;
}

export interface CpuResources {
  sockets: CpuSocket[];
  /** Online logical CPUs. */
  total: number;
}

export interface MemoryResources {
  /** Bytes in use: MemTotal - MemAvailable. */
  used: number;
  /** Bytes: MemTotal. */
  total: number;
}

export interface ServerResources {
  cpu: CpuResources;
  memory: MemoryResources;
}

/** What /sys/devices/system/cpu/cpuN says about one logical CPU; every field optional. */
export interface CpuSysFacts {
  /** topology/physical_package_id */
  physicalPackageId?: number | undefined;
  /** topology/die_id */
  dieId?: number | undefined;
  /** topology/cluster_id */
  clusterId?: number | undefined;
  /** topology/core_id */
  coreId?: number | undefined;
  /** cpufreq/scaling_cur_freq, kHz */
  curFreqKhz?: number | undefined;
  /** cpufreq/cpuinfo_max_freq, kHz */
  maxFreqKhz?: number | undefined;
}

export interface CpuInputs {
  cpuinfo: ParsedCpuinfo;
  /**
   * Online logical CPU ids (/sys/devices/system/cpu/online). When undefined
   * (file absent) the processors listed in /proc/cpuinfo are used instead.
   */
  online: readonly number[] | undefined;
  /** Per logical CPU id facts from /sys; CPUs missing here fall back to /proc/cpuinfo. */
  sys: ReadonlyMap<number, CpuSysFacts>;
}

export interface ResourceInputs extends CpuInputs {
  meminfo: Meminfo;
}

interface SocketAccumulator {
  cores: Set<string>;
  threads: number;
  freqSum: number;
  freqCount: number;
  turboMax: number;
  name: string | undefined;
  vendor: string | undefined;
}

export function computeCpu(inputs: CpuInputs): CpuResources {
  const { cpuinfo, sys } = inputs;
  const byProcessor = new Map(cpuinfo.processors.map((p) => [p.processor, p] as const));
  const ids = [...new Set(inputs.online ?? cpuinfo.processors.map((p) => p.processor))].sort((a, b) => a - b);

  const sockets = new Map<number, SocketAccumulator>();
  for (const id of ids) {
    const facts = sys.get(id) ?? {};
    const proc = byProcessor.get(id);

    const pkg = facts.physicalPackageId ?? proc?.physicalId ?? 0;
    let acc = sockets.get(pkg);
    if (!acc) {
      acc = { cores: new Set(), threads: 0, freqSum: 0, freqCount: 0, turboMax: 0, name: undefined, vendor: undefined };
      sockets.set(pkg, acc);
    }

    // core_id is only unique within a die/cluster on some platforms; threads of
    // one core always share both, so qualifying by them never splits a core.
    const coreKey =
      facts.coreId !== undefined
        ? `sys:${facts.dieId ?? ''}:${facts.clusterId ?? ''}:${facts.coreId}`
        : proc?.coreId !== undefined
          ? `cpuinfo:${proc.coreId}`
          : `thread:${id}`;
    acc.cores.add(coreKey);
    acc.threads += 1;

    const mhz = facts.curFreqKhz !== undefined && facts.curFreqKhz > 0 ? facts.curFreqKhz / 1000 : proc?.mhz;
    if (mhz !== undefined && mhz > 0) {
      acc.freqSum += mhz;
      acc.freqCount += 1;
    }
    if (facts.maxFreqKhz !== undefined && facts.maxFreqKhz / 1000 > acc.turboMax) {
      acc.turboMax = facts.maxFreqKhz / 1000;
    }
    if (proc && acc.name === undefined) {
      acc.name = proc.name;
      acc.vendor = proc.vendor;
    }
  }

  const fallback = cpuinfo.processors[0];
  return {
    sockets: [...sockets.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, acc]) => ({
        cores: acc.cores.size,
        frequency: acc.freqCount > 0 ? Math.round(acc.freqSum / acc.freqCount) : 0,
        frequency_turbo: Math.round(acc.turboMax),
        name: acc.name ?? fallback?.name ?? '',
        vendor: acc.vendor ?? fallback?.vendor ?? '',
        threads: acc.threads,
      })),
    total: ids.length,
  };
}

export function computeMemory(meminfo: Meminfo): MemoryResources {
  const total = meminfo.MemTotal;
  if (total === undefined) throw new Error('/proc/meminfo has no MemTotal');
  const available = meminfo.MemAvailable ?? (meminfo.MemFree ?? 0) + (meminfo.Buffers ?? 0) + (meminfo.Cached ?? 0);
  const used = Math.min(total, Math.max(0, total - available));
  return { used, total };
}

export function computeResources(inputs: ResourceInputs): ServerResources {
  return { cpu: computeCpu(inputs), memory: computeMemory(inputs.meminfo) };
}

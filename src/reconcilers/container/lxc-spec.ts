import type { Idmap } from '../../host/idmap/types.ts';
import type { CgroupVersion, LxcDiskMount, LxcNic, LxcSpec, LxcUnixDevice } from '../../host/lxc/types.ts';
import { devsvcEnabled } from '../../devsvc/guest-view.ts';
import { DEVSVC_TARGETS } from '../../devsvc/paths.ts';
import { parseSize } from '../../util/size.ts';
import { parseBool } from '../../util/parse-bool.ts';

export interface HostFacts {
  cgroupVersion: CgroupVersion;
  apparmorEnabled: boolean;
  cpuCount: number;
  memoryBytes: number;
  /** cgroup v1: memory.memsw.* exists, so `limits.memory.swap=false` can also cap memory+swap. */
  swapAccounting?: boolean;
}

const bool = (v: string | undefined) => parseBool(v);

/** `limits.cpu`: a count N → the first N CPUs (at most the host's); a set (`0-3,6`) as given, refused when it names a CPU the host lacks. */
export function cpusetOf(limit: string | undefined, cpuCount: number): string | undefined {
  if (!limit) return undefined;
  if (/^\d+$/.test(limit)) {
    const n = Math.min(Math.max(1, Number(limit)), cpuCount);
    return n === 1 ? '0' : `0-${n - 1}`;
  }
  const highest = Math.max(...limit.split(/[,-]/).map(Number));
  if (highest >= cpuCount)
    throw new Error(`limits.cpu=${limit} names CPU ${highest}, but this host has CPUs 0-${cpuCount - 1}`);
  return limit;
}

/** `limits.memory`: bytes, or a percentage of the host's memory. */
export function memoryBytesOf(limit: string | undefined, hostBytes: number): number | undefined {
  if (!limit) return undefined;
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(limit);
  return pct ? Math.floor((hostBytes * Number(pct[1])) / 100) : parseSize(limit);
}

/**
 * Everything LXC needs for one container, from its expanded config and what the reconciler
 * resolved on the host. Pure: no decision here asks the host anything.
 */
export function computeLxcSpec(input: {
  hostname: string;
  architecture: string;
  rootfsPath: string;
  config: Record<string, string>;
  idmap: Idmap;
  host: HostFacts;
  logFile: string;
  consoleLogFile: string;
  seccompProfile?: string | undefined;
  nics: LxcNic[];
  disks: LxcDiskMount[];
  unixDevices?: LxcUnixDevice[];
  /** The host directory of the container's devsvc socket, mounted at /dev/svc and /dev/lxd unless `security.devsvc=false`. */
  devsvcDir?: string | undefined;
  /** nvidia.runtime=true: LXC's nvidia hook (found by the caller on the host). */
  nvidiaHook?: string | undefined;
}): LxcSpec {
  const c = input.config;
  const privileged = bool(c['security.privileged']);
  const environment: Record<string, string> = {};
  const prlimits: Record<string, string> = {};
  for (const [k, v] of Object.entries(c)) {
    if (k.startsWith('environment.')) environment[k.slice('environment.'.length)] = v;
    if (k.startsWith('limits.kernel.')) prlimits[k.slice('limits.kernel.'.length)] = v;
  }
  const memoryBytes = memoryBytesOf(c['limits.memory'], input.host.memoryBytes);
  const cpuset = cpusetOf(c['limits.cpu'], input.host.cpuCount);
  const swap =
    c['limits.memory.swap'] !== undefined && c['limits.memory.swap'] !== '' ? bool(c['limits.memory.swap']) : undefined;
  return {
    hostname: input.hostname,
    rootfsPath: input.rootfsPath,
    architecture: input.architecture,
    privileged,
    ...(privileged ? {} : { idmap: input.idmap, idmappedRootfs: true }),
    cgroupVersion: input.host.cgroupVersion,
    apparmorEnabled: input.host.apparmorEnabled,
    limits: {
      ...(cpuset ? { cpuset } : {}),
      ...(memoryBytes !== undefined ? { memoryBytes } : {}),
      ...(swap !== undefined ? { swap } : {}),
      ...(swap === false && input.host.swapAccounting ? { swapAccounting: true } : {}),
      ...(c['limits.processes'] ? { processes: Number(c['limits.processes']) } : {}),
    },
    prlimits,
    environment: { ...nvidiaEnvironment(c, input.nvidiaHook), ...environment },
    ...(input.nvidiaHook ? { mountHooks: [input.nvidiaHook] } : {}),
    ...(input.seccompProfile ? { seccompProfile: input.seccompProfile } : {}),
    logFile: input.logFile,
    consoleLogFile: input.consoleLogFile,
    nics: input.nics,
    disks: [...input.disks, ...devsvcMounts(input.devsvcDir, c)],
    ...(input.unixDevices?.length ? { unixDevices: input.unixDevices } : {}),
  };
}

/**
 * What LXC's nvidia hook reads (as LXD sets it): no GPU of its own (the container's gpu devices pass theirs),
 * the driver capabilities (default compute,utility) and the CUDA and driver requirements when given. The
 * container's own `environment.*` keys win.
 */
function nvidiaEnvironment(config: Record<string, string>, hook: string | undefined): Record<string, string> {
  if (!hook) return {};
  return {
    NVIDIA_VISIBLE_DEVICES: 'none',
    NVIDIA_DRIVER_CAPABILITIES: config['nvidia.driver.capabilities'] || 'compute,utility',
    ...(config['nvidia.require.cuda'] ? { NVIDIA_REQUIRE_CUDA: config['nvidia.require.cuda'] } : {}),
    ...(config['nvidia.require.driver'] ? { NVIDIA_REQUIRE_DRIVER: config['nvidia.require.driver'] } : {}),
  };
}

/**
 * The devsvc directory's mounts (read-only: the guest only connects to the socket; nothing in the
 * directory is its to change). Optional, so a start never fails for want of it.
 */
function devsvcMounts(dir: string | undefined, config: Record<string, string>): LxcDiskMount[] {
  if (!dir || !devsvcEnabled(config)) return [];
  return DEVSVC_TARGETS.map((target) => ({
    source: dir,
    target,
    kind: 'dir' as const,
    readonly: true,
    optional: true,
  }));
}

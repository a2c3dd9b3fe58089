/**
 * The real host adapters the observers are given (their interfaces: src/observers/adapters.ts): thin
 * objects over the readers in this folder.
 */
import type {
  ContainerStatsAdapter,
  InitExitAdapter,
  LiveLookAdapter,
  LxcMonitorAdapter,
} from '../../observers/adapters.ts';
import { readHostLink } from '../devices/read-host-link.ts';
import { readCgroupStats } from './cgroup-stats.ts';
import { readInitExit } from './read-init-exit.ts';
import { driftedCgroupFiles } from './live-cgroup.ts';
import { readContainerMounts } from './live-mounts.ts';
import { readContainerLinks } from './live-nic-types.ts';
import { watchStates } from './monitor.ts';
import { readNetworkStats } from './network-stats.ts';

export function createLiveLookAdapter(): LiveLookAdapter {
  return {
    driftedCgroupFiles,
    readMounts: readContainerMounts,
    readContainerLinks,
    hostHasLink: async (name) => (await readHostLink(name)) !== undefined,
  };
}

export function createContainerStatsAdapter(): ContainerStatsAdapter {
  return { cgroupStats: (pid) => readCgroupStats({ pid }), networkStats: (pid) => readNetworkStats(pid) };
}

export function createInitExitAdapter(): InitExitAdapter {
  return { readInitExit: (logFile, pid) => readInitExit(logFile, pid) };
}

export function createLxcMonitorAdapter(): LxcMonitorAdapter {
  return { watchStates };
}

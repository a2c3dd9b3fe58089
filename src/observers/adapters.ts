/**
 * What the observers need of the host, as narrow interfaces passed in by the composition root (agent.ts
 * builds the real ones from src/host: host/lxc/observer-adapters.ts, host/expiry-files-adapter.ts; tests pass simulators). The observers'
 * counterpart of reconcilers/adapters.ts: an observer reads the host only through these (and LXC's state
 * through the reconcilers' LxcAdapter).
 */
import type { CgroupStats } from '../host/lxc/cgroup-stats.ts';
import type { InitExit } from '../host/lxc/init-exit.ts';
import type { LxcMonitorEvent } from '../host/lxc/monitor.ts';
import type { InterfaceStats } from '../host/lxc/network-stats.ts';

/** What a running container has now, compared by the live drift observer with what svcd applied. Spawns nothing. */
export interface LiveLookAdapter {
  /** The cgroup files (of `file → value applied`) that show something else now. */
  driftedCgroupFiles(applied: Record<string, string>): string[];
  /** The mounts in the container (init `pid`) by target; throws when the process is gone. */
  readMounts(pid: number): Map<string, { readonly: boolean; root: string }>;
  /** The interfaces in the container's network namespace (undefined when it is gone). */
  readContainerLinks(pid: number): Promise<Set<string> | undefined>;
  /** Whether the host has an interface of that name (a nic's host-side veth). */
  hostHasLink(name: string): Promise<boolean>;
}

/** A running container's usage (`GET .../state`): its cgroup counters and its interfaces, from files. */
export interface ContainerStatsAdapter {
  cgroupStats(pid: number): Promise<CgroupStats>;
  networkStats(pid: number): Promise<Record<string, InterfaceStats>>;
}

/** How a stopped container's init ended, from its LXC log (the stop judge). */
export interface InitExitAdapter {
  readInitExit(logFile: string, pid?: number): Promise<InitExit>;
}

/** LXC's state events (lxc-monitor) until `signal` aborts (resolves) or the monitor fails (rejects). */
export interface LxcMonitorAdapter {
  watchStates(input: { lxcPath: string; signal: AbortSignal; onEvent: (ev: LxcMonitorEvent) => void }): Promise<void>;
}

/** Files the expiry observers remove: recorded exec output past its age, and expired backups' tarballs. */
export interface ExpiryFilesAdapter {
  /** Exec output files older than `maxAgeMs` in every container's log directory under `logsDir`; the removed paths. */
  removeOldExecOutput(logsDir: string, nowMs: number, maxAgeMs: number): Promise<string[]>;
  /** A backup's tarball; absent is success. */
  removeBackupFile(stateDir: string, containerId: string, backupId: string): Promise<void>;
}

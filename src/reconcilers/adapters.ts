/**
 * What the reconcilers need of the host, as narrow interfaces passed in by the composition root
 * (agent.ts builds the real ones from src/host; component tests pass the simulators of
 * src/test-support). A reconciler reads and changes the host only through these.
 */
import type { ImageFiles } from '../host/images/inspect-image.ts';
import type { CgroupSetting, ContainerCgroups } from '../host/lxc/live-cgroup.ts';
import type { LiveMount } from '../host/lxc/live-mounts.ts';
import type { ContainerState, LxcRef, LxcState } from '../host/lxc/lxc-args.ts';
import type { StorageDriver } from '../host/storage/types.ts';

export interface LxcCall extends LxcRef {
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

/**
 * A container's power state under LXC (host/lxc/lifecycle.ts). `start` rejects with a ContainerStartError
 * when LXC refuses the config or the container does not come up; already running is success. `stop`,
 * `freeze` of a frozen one and `unfreeze` of a running one: already there is success.
 */
export interface LxcAdapter {
  state(ref: LxcCall): Promise<ContainerState>;
  start(input: LxcCall & { configFile: string; logFile?: string | undefined; knownStopped?: boolean }): Promise<ContainerState & { pid: number }>;
  stop(input: LxcCall & { force?: boolean }): Promise<{ forced: boolean }>;
  freeze(ref: LxcCall): Promise<void>;
  unfreeze(ref: LxcCall): Promise<void>;
  /** What LXC lists under `lxcPath`, with each container's state (`lxc-ls`). */
  list(lxcPath: string, signal?: AbortSignal): Promise<{ name: string; state: LxcState; pid?: number }[]>;
  /** The empty cgroups a failed start leaves behind (host/lxc/remove-leftovers.ts). */
  removeLeftovers(name: string): Promise<void>;
}

/** The live side of a running container (host/lxc/live-cgroup.ts, live-mounts.ts): its cgroups and mounts. */
export interface LxcLiveAdapter {
  locateCgroups(pid: number): Promise<ContainerCgroups>;
  /** Writes what differs; returns what each file shows after (throws a CgroupWriteError for a refused value). */
  applyCgroupSettings(cg: ContainerCgroups, settings: readonly CgroupSetting[]): Record<string, string>;
  setDeviceAccess(cg: ContainerCgroups, rule: string, allow: boolean): void;
  /** What every container may use whatever its devices (LXC's common.conf). */
  baseAllowedDevices(): string[];
  readMounts(pid: number): Map<string, { readonly: boolean; root: string }>;
  attachMount(pid: number, m: LiveMount, signal?: AbortSignal): Promise<void>;
  detachMount(pid: number, target: string, opts?: { removeFile?: boolean; signal?: AbortSignal | undefined }): Promise<void>;
}

/** The storage drivers (host/storage/registry.ts): one per name. */
export interface StorageAdapter {
  driverFor(name: string): StorageDriver;
}

/** Filling a volume from an archive: an image's files, or a backup tarball (or one snapshot of it). */
export interface UnpackAdapter {
  unpackImage(files: ImageFiles, target: string, signal?: AbortSignal): Promise<void>;
  unpackBackup(file: string, target: string, signal: AbortSignal | undefined, part: { snapshot?: string }): Promise<void>;
}

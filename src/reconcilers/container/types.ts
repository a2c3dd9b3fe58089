import type { ContainerRow } from '../../desired/schema/index.ts';
import type { EventBus } from '../../events/index.ts';
import type { SubidRange } from '../../host/idmap/types.ts';
import type { ContainerState } from '../../host/lxc/lxc-args.ts';
import type { LiveRegistry } from './ensure-live.ts';
import type { RootfsDeps } from './ensure-rootfs.ts';
import type {
  ContainerFilesAdapter,
  DeviceNodesAdapter,
  HostDevicesAdapter,
  LxcAdapter,
  LxcCgroupsAdapter,
  LxcMountsAdapter,
  LxcNicsAdapter,
  NetworkAdapter,
  ProxyAdapter,
} from '../adapters.ts';
import type { BootGate } from './boot-sequencer.ts';
import type { HostFacts } from './lxc-spec.ts';
import type { Trash } from '../../host/storage/trash.ts';

/** The files a container is started from: its LXC config, LXC's log and the console log. */
export interface KeptFiles {
  configFile: string;
  logFile: string;
  consoleLogFile: string;
}

/**
 * What each reconcile tells the offline keeper (observers/offline-keeper.ts): the power state last desired,
 * and the config it wrote, so the host is kept on them while the database cannot be reached.
 */
export interface ContainerKeeper {
  remember(c: Pick<ContainerRow, 'id' | 'name' | 'power'>, files?: KeptFiles): void;
  forget(id: string): void;
}

export interface ContainerReconcilerDeps extends RootfsDeps {
  lxc: LxcAdapter;
  /** A running container's cgroups, mounts and nics, changed live (ensure-live.ts, ensure-live-nics.ts). */
  liveCgroups: LxcCgroupsAdapter;
  liveMounts: LxcMountsAdapter;
  liveNics: LxcNicsAdapter;
  /** The nodes of unix-char/unix-block devices (ensure-unix-devices.ts). */
  deviceNodes: DeviceNodesAdapter;
  /** Managed networks: the DHCP host entries of the container's nics on them (ensure-network-nics.ts). */
  network?: NetworkAdapter;
  /** Proxy devices: forwarder processes and nat rules (ensure-proxies.ts). */
  proxy?: ProxyAdapter;
  host: HostFacts;
  subids: { subuid: SubidRange[]; subgid: SubidRange[] };
  /** At svcd start, containers power up by boot.autostart.priority, a wave at a time (boot-sequencer.ts). */
  boot?: BootGate;
  /** Lifecycle events (container-created, -renamed, -updated, -deleted) once converged. */
  bus?: EventBus;
  /** The guest-facing socket (devsvc): open while the container is desired up, removed with it. */
  devsvc?: {
    sync(
      id: string,
      current?: { row: ContainerRow; config: Record<string, string>; devices: Record<string, Record<string, string>> },
    ): Promise<void>;
    remove(id: string): Promise<void>;
  };
  /** What each running container has of its config (ensure-live.ts): read by the drift observer and the state route. */
  live?: LiveRegistry;
  /** Tell the observer what a reconcile left the container as (it records and judges it like any look). */
  onHostChange?: (id: string, seen: ContainerState, row?: ContainerRow) => Promise<void>;
  /**
   * Set where members share the database (every daemon): a container whose row names another member as its
   * location is left alone here, and what this host still has of it goes (`release`, release-moved.ts).
   */
  ownership?: { release(id: string, signal: AbortSignal): Promise<void> };
  /** Keeps the host on the last desired state while the database cannot be reached. */
  keeper?: ContainerKeeper;
  /** Where a removed container's directories go (`<stateDir>/trash`), to be removed in the background (host/storage/trash.ts). */
  trash: Trash;
  /** What the host has for the container's devices: sysfs, interfaces, host paths, lxcfs (resolve-*.ts). */
  hostDevices: HostDevicesAdapter;
  /** The container's LXC directory (config, seccomp policy) and its log directory. */
  containerFiles: ContainerFilesAdapter;
}

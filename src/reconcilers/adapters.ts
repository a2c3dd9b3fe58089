/**
 * What the reconcilers need of the host, as narrow interfaces passed in by the composition root
 * (agent.ts builds the real ones from src/host; component tests pass the simulators of
 * src/test-support). A reconciler reads and changes the host only through these.
 */
import type { DeviceNodeSpec } from '../host/devices/ensure-device-node.ts';
import type { HostNode } from '../host/devices/read-device-node.ts';
import type { DrmCard } from '../host/devices/read-drm-cards.ts';
import type { IbPort } from '../host/devices/read-infiniband.ts';
import type { UsbDevice } from '../host/devices/read-usb-devices.ts';
import type { SysfsNode, SysfsRoots } from '../host/devices/sysfs-roots.ts';
import type { ContainerMetadata } from '../host/templates/metadata-format.ts';
import type { TemplateContext } from '../host/templates/render-template.ts';
import type { ImageFiles } from '../host/images/inspect-image.ts';
import type { CgroupSetting, ContainerCgroups } from '../host/lxc/live-cgroup.ts';
import type { LiveMount } from '../host/lxc/live-mounts.ts';
import type { ContainerState, LxcRef, LxcState } from '../host/lxc/lxc-args.ts';
import type { DhcpHostEntry, NetworkSpec } from '../host/network/types.ts';
import type { InsideNic, PhysicalState } from '../host/lxc/live-nic-types.ts';
import type { LiveNic } from '../host/lxc/live-nics.ts';
import type { FilteredNic } from '../host/lxc/nic-filter.ts';
import type { NicLimits } from '../host/lxc/nic-limits.ts';
import type { ForwarderSpec, NatRule } from '../host/proxy/types.ts';
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
  start(
    input: LxcCall & { configFile: string; logFile?: string | undefined; knownStopped?: boolean },
  ): Promise<ContainerState & { pid: number }>;
  stop(input: LxcCall & { force?: boolean }): Promise<{ forced: boolean }>;
  freeze(ref: LxcCall): Promise<void>;
  unfreeze(ref: LxcCall): Promise<void>;
  /** Every container under `lxcPath` (or only `names`) with its state, as `lxc-ls -f` would list them (host/lxc/host-states.ts: spawn-free where the host's records settle it). */
  list(
    lxcPath: string,
    signal?: AbortSignal,
    names?: readonly string[],
  ): Promise<{ name: string; state: LxcState; pid?: number }[]>;
  /** The empty cgroups a failed start leaves behind (host/lxc/remove-leftovers.ts). */
  removeLeftovers(name: string): Promise<void>;
}

/** A running container's cgroups (host/lxc/live-cgroup.ts): its limits and its device access, changed in place. */
export interface LxcCgroupsAdapter {
  locateCgroups(pid: number): Promise<ContainerCgroups>;
  /** Writes what differs; returns what each file shows after (throws a CgroupWriteError for a refused value). */
  applyCgroupSettings(cg: ContainerCgroups, settings: readonly CgroupSetting[]): Record<string, string>;
  setDeviceAccess(cg: ContainerCgroups, rule: string, allow: boolean): void;
  /** What every container may use whatever its devices (LXC's common.conf). */
  baseAllowedDevices(): string[];
}

/** Mounts in a running container (host/lxc/live-mounts.ts): what it has, bind mounts added and removed live. */
export interface LxcMountsAdapter {
  readMounts(pid: number): Map<string, { readonly: boolean; root: string }>;
  attachMount(pid: number, m: LiveMount, signal?: AbortSignal): Promise<void>;
  detachMount(
    pid: number,
    target: string,
    opts?: { removeFile?: boolean; signal?: AbortSignal | undefined },
  ): Promise<void>;
}

/**
 * A running container's nics (host/lxc/live-nics.ts, live-nic-types.ts, nic-limits.ts, nic-filter.ts): veths
 * on bridges and what svcd sets around them, macvlan and physical interfaces moved in, and the links seen.
 */
export interface LxcNicsAdapter {
  /** A veth whose peer is created in the container (init `pid`) with the nic's name, MAC and MTU; the host side on its bridge, up (host/lxc/live-nics.ts). */
  attachNic(pid: number, nic: LiveNic, signal?: AbortSignal): Promise<void>;
  /** Delete a nic's host-side veth (its peer goes with it); absent is success. */
  detachNic(hostName: string, signal?: AbortSignal): Promise<void>;
  /** A host-side veth: undefined when absent, else the bridge it is enslaved to ('' for none). Spawns nothing. */
  readHostVeth(hostName: string): Promise<{ master: string } | undefined>;
  /** Put a host-side veth back on its bridge (after the bridge was recreated), up. */
  rejoinBridge(nic: Pick<LiveNic, 'hostName' | 'parent'>, signal?: AbortSignal): Promise<void>;
  /**
   * A running container's interface `nic.name` that is a veth whose host side has another name (LXC's
   * own, from before stable names): that host side renamed to `nic.hostName`; its MAC and MTU, or
   * undefined when there is no such veth.
   */
  adoptNic(
    pid: number,
    nic: Pick<LiveNic, 'hostName' | 'name'>,
    signal?: AbortSignal,
  ): Promise<{ hwaddr: string; mtu: number } | undefined>;
  /** tc limits on a host-side veth (none: cleared; `fresh`: made by the container's start just now; host/lxc/nic-limits.ts). */
  applyNicLimits(hostName: string, limits: NicLimits, signal?: AbortSignal, fresh?: boolean): Promise<void>;
  /** security.mac_filtering in the `bridge svcd` table: set (nic) or removed (undefined) (host/lxc/nic-filter.ts). */
  applyNicFilter(hostName: string, nic: FilteredNic | undefined, signal?: AbortSignal): Promise<void>;
  /** A nic's host routes via its static address on the bridge, or (no `via`: p2p) to its host side: set (replace) or removed (del). */
  applyNicRoutes(
    verb: 'replace' | 'del',
    routes: readonly string[],
    via: { ipv4?: string | undefined; ipv6?: string | undefined } | undefined,
    bridge: string,
    signal?: AbortSignal,
  ): Promise<void>;
  /** A macvlan made on its parent in the container, or a host interface (physical) moved in, as `name` (host/lxc/live-nic-types.ts). */
  attachInsideNic(
    pid: number,
    nic: InsideNic & { nictype: 'macvlan' | 'physical' },
    signal?: AbortSignal,
  ): Promise<PhysicalState | void>;
  /** The macvlan deleted, or the physical interface given back to the host under its own name (with `was`: its MAC and MTU); absent is success. */
  detachInsideNic(
    pid: number,
    nic: Pick<InsideNic, 'name' | 'parent'> & { nictype: 'macvlan' | 'physical'; was?: PhysicalState | undefined },
    signal?: AbortSignal,
  ): Promise<void>;
  /** A physical interface back on the host after its container: its name, MAC and MTU again; false when it is not on the host. */
  reclaimPhysical(parent: string, was: PhysicalState, signal?: AbortSignal): Promise<boolean>;
  /** A host interface's MAC, MTU and ifindex (undefined when there is none of that name). Spawns nothing. */
  readPhysical(name: string): Promise<PhysicalState | undefined>;
  /** Whether the host has an interface of that name (sysfs; spawns nothing). */
  hostHasLink(name: string): Promise<boolean>;
  /** The interfaces in the container's network namespace (undefined when it is gone). Spawns nothing. */
  readContainerLinks(pid: number): Promise<Set<string> | undefined>;
}

/** The live side of a running container, all of it (the simulated LXC and the real adapters are each one). */
export type LxcLiveAdapter = LxcCgroupsAdapter & LxcMountsAdapter & LxcNicsAdapter;

/** The storage drivers (host/storage/registry.ts): one per name. */
export interface StorageAdapter {
  driverFor(name: string): StorageDriver;
}

/** Filling a volume from an archive: an image's files, or a backup tarball (or one snapshot of it). */
export interface UnpackAdapter {
  unpackImage(files: ImageFiles, target: string, signal?: AbortSignal): Promise<void>;
  unpackBackup(
    file: string,
    target: string,
    signal: AbortSignal | undefined,
    part: { snapshot?: string },
  ): Promise<void>;
}

/**
 * Managed networks on the host (host/network/): bridges, addresses, sysctls, tunnels, one supervised
 * dnsmasq per network, and svcd's nftables table. Every method is idempotent and converges from any
 * partial state (half a bridge, a dnsmasq left from a crash, a stale rule).
 */
export interface NetworkAdapter {
  /** Bring one network to its spec: bridge, its addresses and settings, tunnels, routes, sysctls, dnsmasq (started, or restarted when its config changed). */
  ensureNetwork(spec: NetworkSpec, signal?: AbortSignal): Promise<void>;
  /** Remove a network's bridge, tunnels, routes, dnsmasq and directory (`dir`); nothing there is success. */
  removeNetwork(name: string, dir: string, signal?: AbortSignal): Promise<void>;
  /** Replace svcd's nftables table(s) with the rules of exactly these networks (none: the table goes). */
  applyFirewall(specs: readonly NetworkSpec[], signal?: AbortSignal): Promise<void>;
  /** What is wrong with a network on the host now (bridge missing or down, dnsmasq not running, a tunnel or external interface off the bridge), or undefined. Spawns nothing. */
  health(spec: NetworkSpec): Promise<string | undefined>;
  /** Write (entry) or remove (undefined) one DHCP host entry of a network (key: `<container id>.<device>`); dnsmasq is told when one changes or goes. */
  setDhcpHost(spec: Pick<NetworkSpec, 'name' | 'dir'>, key: string, entry: DhcpHostEntry | undefined): Promise<void>;
  /** Remove the network's DHCP host entries whose key is not in `keep`. */
  pruneDhcpHosts(spec: Pick<NetworkSpec, 'name' | 'dir'>, keep: ReadonlySet<string>): Promise<void>;
}

/**
 * Proxy devices on the host (host/proxy/): one `svcd-proxy` forwarder per device of a running
 * container, and nat mode's DNAT rules.
 */
export interface ProxyAdapter {
  /** Running with exactly this spec: nothing; else (re)started. Throws with the forwarder's error text. */
  ensureForwarder(spec: ForwarderSpec, signal?: AbortSignal): Promise<{ pid: number; started: boolean }>;
  /** Stopped (SIGTERM, then SIGKILL after 2 s); absent is success; a unix listen socket file it made is removed. */
  stopForwarder(containerId: string, device: string): Promise<void>;
  /** device → pid of the live forwarders of a container (from the pid files; dead ones are not listed). No spawn. */
  liveForwarders(containerId: string): Promise<Map<string, number>>;
  /** nat mode (area 2 implements this part in src/host/proxy/proxy-nat.ts): a container's DNAT rules, set or removed. */
  applyNat(containerId: string, rules: readonly NatRule[], signal?: AbortSignal): Promise<void>;
}

/**
 * Device nodes on the host (host/devices/device-nodes-adapter.ts): the host nodes a unix-char/unix-block
 * device names, and the nodes svcd makes for a container in its devices directory.
 */
export interface DeviceNodesAdapter {
  /** The node at `path` (symlinks followed), `other` for anything else, undefined when absent. */
  read(path: string): Promise<HostNode | undefined>;
  /** A node with exactly these attributes exists at `spec.path` (replaced atomically when it differs). */
  ensure(spec: DeviceNodeSpec, signal?: AbortSignal): Promise<void>;
  /** The directory exists with this mode. */
  ensureDir(dir: string, mode: number): Promise<void>;
  /** The file names in `dir` ([] when it does not exist). */
  list(dir: string): Promise<string[]>;
  /** Remove a node; absent is success. */
  remove(path: string): Promise<void>;
}

/**
 * A container's root volume on the host (host/templates/rootfs-files-adapter.ts): its metadata.yaml and
 * templates/ (and their rendering), files written inside its rootfs (resolved in the root, never through its symlinks), and the
 * few plain files around it (an imported backup's tarball, a snapshot's directory).
 */
export interface RootfsFilesAdapter {
  /** Whether something is at `p` (no symlink followed at the end). */
  exists(p: string): Promise<boolean>;
  /** `dir` is a directory (made with `mode`, parents too, when it is not). */
  ensureDir(dir: string, mode: number): Promise<void>;
  /** Remove a file; absent is success. */
  remove(p: string): Promise<void>;
  /** The volume's metadata.yaml (empty when it has none). */
  readMetadata(volumeDir: string): Promise<ContainerMetadata>;
  writeMetadata(volumeDir: string, metadata: ContainerMetadata): Promise<void>;
  /** A file of templates/, undefined when absent. */
  readTemplate(volumeDir: string, name: string): Promise<Buffer | undefined>;
  /** Whether `target` (a path inside the container) exists in `rootfs`. */
  existsInRoot(rootfs: string, target: string): Promise<boolean>;
  /** Write `content` at `target` inside `rootfs` (its directories made; no path escapes the root). */
  writeInRoot(rootfs: string, target: string, content: string): Promise<void>;
  /** An image template rendered (contained: its own process, a deadline, no file access); rejects with why not. */
  renderTemplate(source: string, context: TemplateContext): Promise<string>;
}

/**
 * svcd's own files of a container under the state dir (host/lxc/container-files-adapter.ts): its LXC
 * directory (config, seccomp policy), its log directory. The looks are synchronous: every pass of a
 * converged container makes them, and a stat costs a few µs against a promise's thread-pool hand-off.
 */
export interface ContainerFilesAdapter {
  /** `dir` exists as a directory with exactly these permission bits. */
  ensureDir(dir: string, mode: number): Promise<void>;
  /** `text` written atomically unless the file already holds exactly that; what was done. */
  writeIfChanged(file: string, text: string, mode?: number): Promise<'created' | 'changed' | 'unchanged'>;
  /** Remove a file; absent is success. */
  remove(file: string): Promise<void>;
  exists(p: string): boolean;
  rename(from: string, to: string): Promise<void>;
  /** A log file emptied (when it has anything) and its rotated part (`.1`) removed: a new run's log. */
  resetLog(file: string): Promise<void>;
}

/**
 * What the host has for a container's devices (host/devices/host-devices-adapter.ts): sysfs and /dev
 * under `roots` (gpu, usb, infiniband), network interfaces, host paths for disks, lxcfs and the NVIDIA
 * tooling. Reads only; spawns nothing.
 */
export interface HostDevicesAdapter {
  /** Where gpu/usb/infiniband devices are looked for (the host's /sys and /dev unless configured). */
  readonly roots: SysfsRoots;
  drmCards(): Promise<DrmCard[]>;
  usbDevices(): Promise<UsbDevice[]>;
  /** Whether a USB device's /dev/bus/usb node is there (plugged). */
  hasUsbNode(u: UsbDevice): Promise<boolean>;
  /** The directories whose change means a USB device came or went. */
  usbWatchPaths(): Promise<string[]>;
  hasInfiniband(): Promise<boolean>;
  /** The InfiniBand port behind an IPoIB interface, undefined when it is not one. */
  ibPortOf(ifname: string): Promise<IbPort | undefined>;
  ibNodes(port: IbPort): Promise<{ verbs: SysfsNode[]; mad: SysfsNode[] }>;
  /** A host interface: a bridge, something else, or undefined when absent. */
  hostLink(name: string): Promise<'bridge' | 'other' | undefined>;
  /** Whether a host interface has SR-IOV virtual functions; `missing` names what it lacks. */
  sriov(parent: string): Promise<{ ok: boolean; missing?: string }>;
  /** Host paths a disk device binds: their kind, the mounts below, the first directory a user cannot search. */
  pathKind(p: string): Promise<'dir' | 'file' | undefined>;
  submounts(p: string): Promise<string[]>;
  unsearchableDir(p: string, uid: number, gid: number): Promise<{ dir: string; mode: number } | undefined>;
  /** Whether lxcfs serves its /proc files now (looked at on every config render). */
  hasLxcfs(): boolean;
  /** The NVIDIA container tooling's LXC hook, or what the host lacks of it. */
  nvidiaTooling(): { hook: string } | { missing: string };
}

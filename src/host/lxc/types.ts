import type { Idmap } from '../idmap/types.ts';

/** cgroup key style: 1 → `lxc.cgroup.*` (legacy/hybrid hosts), 2 → `lxc.cgroup2.*` (unified hosts). */
export type CgroupVersion = 1 | 2;

/** LXC's log priorities, most verbose first. */
export type LxcLogLevel = 'TRACE' | 'DEBUG' | 'INFO' | 'NOTICE' | 'WARN' | 'ERROR' | 'CRIT' | 'ALERT' | 'FATAL';

/**
 * A NIC: a veth (host side `hostName` enslaved to bridge `parent`, or with no `parent` left alone: p2p),
 * a macvlan on host interface `parent`, or host interface `parent` moved in (phys); container side `name`.
 */
export interface LxcNic {
  /** `lxc.net.N.type` (default veth). */
  type?: 'veth' | 'macvlan' | 'phys';
  /** Interface name inside the container (`eth0`). */
  name: string;
  /** `lxc.net.N.link`: the bridge a veth's host side joins ('' for none), the macvlan's or phys's host interface. */
  parent: string;
  hwaddr?: string;
  mtu?: number;
  /** Host-side veth name (`lxc.net.N.veth.pair`); LXC picks `vethXXXXXX` when absent. */
  hostName?: string;
}

/** A host path bind-mounted into the container (a `disk` device other than the root disk). */
export interface LxcDiskMount {
  /** Absolute host path. */
  source: string;
  /** Absolute path inside the container. */
  target: string;
  /** Whether the source is a directory or a file (decides `create=dir|file`); the caller stats it. */
  kind: 'dir' | 'file';
  readonly?: boolean;
  /** `rbind` instead of `bind` (submounts come along). */
  recursive?: boolean;
  /** Mount propagation of the bind (`rslave`, `private` ...). */
  propagation?: 'private' | 'shared' | 'slave' | 'unbindable' | 'rprivate' | 'rshared' | 'rslave' | 'runbindable';
  /** Skip silently when the source is missing. */
  optional?: boolean;
  /**
   * Unprivileged only: an idmapped bind (`idmap=container`, LXC >= 5.0 with kernel idmapped mounts),
   * so files owned by host uid N appear as uid N inside (a custom volume written by the host as root
   * is root's inside) instead of as nobody.
   */
  idmap?: boolean;
}

/**
 * A host device node bind-mounted into the container plus a device-cgroup allow rule. The node's
 * owner and mode are the host's (a bind mount cannot change them).
 */
export interface LxcUnixDevice {
  type: 'char' | 'block';
  /** Host node, e.g. `/dev/kvm`. */
  source: string;
  /** Path inside the container, e.g. `/dev/kvm`. */
  target: string;
  major: number;
  minor: number;
  optional?: boolean;
}

/** cgroup limits, already resolved by the caller (CPU count → CPU list, memory percent → bytes). */
export interface LxcLimits {
  /** CPUs the container may run on, kernel list syntax (`0-1,4`). */
  cpuset?: string;
  memoryBytes?: number;
  /** `limits.memory.swap`: false turns swap off for the container. */
  swap?: boolean;
  /**
   * cgroup v1 only: the host has `memory.memsw.*` (swap accounting on), so swap-off can also cap
   * memory+swap at `memoryBytes`. Without it, swap-off is `memory.swappiness = 0` alone.
   */
  swapAccounting?: boolean;
  /** `limits.processes` → `pids.max`. */
  processes?: number;
}

/** Everything LXC needs to start one container, resolved by the caller: the renderer asks the host nothing. */
export interface LxcSpec {
  /** `lxc.uts.name`. */
  hostname: string;
  /** The rootfs directory (`lxc.rootfs.path = dir:<path>`). */
  rootfsPath: string;
  /** `lxc.arch` (`x86_64`, `aarch64` ...); LXC uses the host's when absent. */
  architecture?: string;
  privileged: boolean;
  /** The user-namespace map; required (non-empty) when not privileged. */
  idmap?: Idmap;
  /** Unprivileged only: mount the rootfs idmapped (`lxc.rootfs.options = idmap=container`) instead of chown-shifting it. */
  idmappedRootfs?: boolean;
  cgroupVersion: CgroupVersion;
  /** Whether AppArmor is enabled on the host; when not, `lxc.apparmor.profile = unconfined`. */
  apparmorEnabled: boolean;
  /** Profile when AppArmor is enabled (default `generated`). */
  apparmorProfile?: string;
  /**
   * Whether lxcfs serves the host (`/var/lib/lxcfs/proc` exists). When it does not, the mount hook that
   * common.conf pulls in would only start a shell that finds nothing to mount: it is left out.
   */
  lxcfs?: boolean;
  /** More `lxc.hook.mount` scripts (nvidia.runtime: LXC's nvidia hook), after common.conf's. */
  mountHooks?: string[];
  /** `lxc.autodev` (default true): LXC populates a fresh tmpfs /dev. */
  autodev?: boolean;
  /**
   * `lxc.signal.halt`: the signal `lxc-stop` sends init for a clean shutdown (LXC's default is SIGPWR).
   * busybox init powers off on SIGUSR2 (1.35 also on SIGPWR); systemd on SIGRTMIN+3.
   */
  haltSignal?: string;
  limits?: LxcLimits;
  /** `limits.kernel.<name>` → `lxc.prlimit.<name>`, values `N`, `unlimited` or `SOFT:HARD`. */
  prlimits?: Record<string, string>;
  /** `environment.*` → `lxc.environment = KEY=value`. */
  environment?: Record<string, string>;
  /** Path of a seccomp policy file (`renderSeccompPolicy`), `lxc.seccomp.profile`. */
  seccompProfile?: string;
  /** `lxc.console.logfile`. */
  consoleLogFile?: string;
  /** `lxc.log.file`. */
  logFile?: string;
  /** `lxc.log.level` (default INFO when `logFile` is set). */
  logLevel?: LxcLogLevel;
  nics?: LxcNic[];
  disks?: LxcDiskMount[];
  unixDevices?: LxcUnixDevice[];
}

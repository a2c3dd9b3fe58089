/**
 * The one home of the cgroup file names svcd writes and reads, per cgroup version. LXC's config keys
 * (`lxc.cgroup.<file>`, `lxc.cgroup2.<file>`), the live writer, the drift check and the usage figures all
 * name files from here.
 */
export const CGROUP_V1 = {
  cpus: 'cpuset.cpus',
  cpuUsage: 'cpuacct.usage',
  memoryLimit: 'memory.limit_in_bytes',
  memoryUsage: 'memory.usage_in_bytes',
  memoryPeak: 'memory.max_usage_in_bytes',
  /** memory+swap: its limit caps both together, so equal to the memory limit means no swap. */
  memswLimit: 'memory.memsw.limit_in_bytes',
  memswUsage: 'memory.memsw.usage_in_bytes',
  swappiness: 'memory.swappiness',
  pidsLimit: 'pids.max',
  pidsCurrent: 'pids.current',
  devicesAllow: 'devices.allow',
  devicesDeny: 'devices.deny',
  freezerState: 'freezer.state',
} as const;

export const CGROUP_V2 = {
  cpus: 'cpuset.cpus',
  /** flat keyed: `usage_usec`. */
  cpuStat: 'cpu.stat',
  memoryLimit: 'memory.max',
  memoryUsage: 'memory.current',
  memoryPeak: 'memory.peak',
  swapLimit: 'memory.swap.max',
  swapUsage: 'memory.swap.current',
  pidsLimit: 'pids.max',
  pidsCurrent: 'pids.current',
} as const;

import type { ContainerRow, ContainerRuntimeRow } from '../desired/schema/index.ts';
import { readCgroupStats } from '../host/lxc/cgroup-stats.ts';
import { readNetworkStats } from '../host/lxc/network-stats.ts';
import { containerStatus } from '../desired/container-status.ts';

/**
 * `GET .../state`: status and pid from the observer's runtime row; cpu, memory, processes and
 * network read from the cgroup and /proc files of the running init (file reads, no process).
 */
export async function readContainerState(_c: ContainerRow, rt: ContainerRuntimeRow | undefined) {
  const status = containerStatus(rt);
  const pid = rt && rt.state !== 'STOPPED' ? rt.pid : 0;
  const [stats, net] = pid
    ? await Promise.all([readCgroupStats({ pid }).catch(() => ({}) as Awaited<ReturnType<typeof readCgroupStats>>), readNetworkStats(pid).catch(() => ({}))])
    : [{} as Awaited<ReturnType<typeof readCgroupStats>>, {}];
  const network = Object.fromEntries(
    Object.entries(net).map(([name, i]) => [
      name,
      {
        addresses: i.addresses,
        counters: i.counters,
        hwaddr: i.hwaddr ?? '',
        host_name: i.hostName ?? '',
        mtu: i.mtu ?? 0,
        state: i.state ?? 'down',
        type: i.type ?? 'broadcast',
      },
    ]),
  );
  return {
    ...status,
    cpu: { usage: stats.cpuUsageNs ?? 0 },
    disk: {},
    memory: { usage: stats.memoryUsage ?? 0, usage_peak: stats.memoryPeak ?? 0, swap_usage: stats.swapUsage ?? 0, swap_usage_peak: 0 },
    network,
    pid,
    processes: stats.processes ?? 0,
  };
}

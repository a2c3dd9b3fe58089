import type { ContainerRow, ContainerRuntimeRow } from '../desired/schema/index.ts';
import type { CgroupStats } from '../host/lxc/cgroup-stats.ts';
import type { ContainerStatsAdapter } from './adapters.ts';
import type { NetworkCounters } from '../host/lxc/parse-proc-net.ts';
import { containerStatus } from '../desired/container-status.ts';

/** The spec's counter names (`bytes_received`, …), plus LXD's error and drop counters under its names. */
export const renderCounters = (n: NetworkCounters) => ({
  bytes_received: n.bytesReceived,
  bytes_sent: n.bytesSent,
  packets_received: n.packetsReceived,
  packets_sent: n.packetsSent,
  errors_received: n.errorsReceived,
  errors_sent: n.errorsSent,
  packets_dropped_outbound: n.packetsDroppedOutbound,
  packets_dropped_inbound: n.packetsDroppedInbound,
});

/**
 * `GET .../state`: status and pid from the observer's runtime row; cpu, memory, processes and
 * network read from the cgroup and /proc files of the running init (file reads, no process).
 */
export async function readContainerState(
  stats: ContainerStatsAdapter,
  _c: ContainerRow,
  rt: ContainerRuntimeRow | undefined,
) {
  const status = containerStatus(rt);
  const pid = rt && rt.state !== 'STOPPED' ? rt.pid : 0;
  const [cg, net] = pid
    ? await Promise.all([
        stats.cgroupStats(pid).catch(() => ({}) as CgroupStats),
        stats.networkStats(pid).catch(() => ({})),
      ])
    : [{} as CgroupStats, {}];
  const network = Object.fromEntries(
    Object.entries(net).map(([name, i]) => [
      name,
      {
        addresses: i.addresses,
        counters: renderCounters(i.counters),
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
    cpu: { usage: cg.cpuUsageNs ?? 0 },
    disk: {},
    memory: {
      usage: cg.memoryUsage ?? 0,
      usage_peak: cg.memoryPeak ?? 0,
      swap_usage: cg.swapUsage ?? 0,
      swap_usage_peak: 0,
    },
    network,
    pid,
    processes: cg.processes ?? 0,
  };
}

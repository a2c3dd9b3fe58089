/**
 * Live figures of the daemon's process for the debug listener (`/debug/vars`): memory, CPU, the handles and
 * requests keeping the event loop alive, and the event loop's delay since the listener opened. Node's own
 * counters only: nothing is spawned and nothing is read from disk.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export function createDebugFigures() {
  let delay: IntervalHistogram | undefined;
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  return {
    /** Starts measuring the event loop's delay (while the debug listener is open: it costs a timer). */
    start() {
      if (delay) return;
      delay = monitorEventLoopDelay({ resolution: 20 });
      delay.enable();
    },
    stop() {
      delay?.disable();
      delay = undefined;
    },
    read() {
      const resources = process.getActiveResourcesInfo();
      const counts: Record<string, number> = {};
      for (const r of resources) counts[r] = (counts[r] ?? 0) + 1;
      const usage = process.resourceUsage();
      return {
        pid: process.pid,
        uptime_seconds: Math.round(process.uptime()),
        node: process.version,
        memory: process.memoryUsage(),
        cpu: { user_us: usage.userCPUTime, system_us: usage.systemCPUTime },
        max_rss_kib: usage.maxRSS,
        active_resources: { total: resources.length, by_type: counts },
        event_loop_delay_ms: delay
          ? {
              min: ms(delay.min),
              mean: ms(delay.mean),
              p50: ms(delay.percentile(50)),
              p99: ms(delay.percentile(99)),
              max: ms(delay.max),
            }
          : null,
      };
    },
  };
}
export type DebugFigures = ReturnType<typeof createDebugFigures>;

import { CONTAINER_KIND } from '../desired/containers.ts';
import type { LiveEntry, LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import type { LiveLookAdapter } from './adapters.ts';
import { createRoundRobin } from './round-robin.ts';
import type { PollObserver } from './types.ts';

export interface LiveDriftObserverDeps {
  live: LiveRegistry;
  /** The running containers' cgroup files, mounts and interfaces. */
  look: LiveLookAdapter;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
  /** Containers compared per tick (default 100): with more running, each is compared every ceil(N/100) ticks. */
  perTick?: number;
}

/**
 * The recorded nics a running container (init `pid`) lacks: names inside from /proc/<pid>/net/dev, host-side
 * veths from /sys/class/net. A container stopped meanwhile lacks none (the container observer sees to it).
 */
export async function missingNics(
  look: Pick<LiveLookAdapter, 'readContainerLinks' | 'hostHasLink'>,
  pid: number,
  nics: LiveEntry['nics'],
): Promise<string[]> {
  if (!nics || (nics.inside.length === 0 && nics.veths.length === 0)) return [];
  const inside = await look.readContainerLinks(pid);
  if (!inside) return [];
  const veths = await Promise.all(nics.veths.map(async (v) => ((await look.hostHasLink(v)) ? undefined : v)));
  return [...nics.inside.filter((n) => !inside.has(n)), ...veths.filter((v) => v !== undefined)];
}

/**
 * Compares what each running container has with what svcd last applied to it (ensure-live.ts): a cgroup
 * limit changed behind svcd's back, a device mount or a nic that is gone, is drift, and the reconcile puts it back.
 * File reads only (four or five cgroup files, ~25 µs each, and one mountinfo per container with live
 * mounts), no process; at most `perTick` containers a tick (round-robin.ts), so a tick costs the same with
 * 1000 running as with 100 (a changed limit is then seen within 50 s instead of 5).
 */
export function createLiveDriftObserver(deps: LiveDriftObserverDeps): PollObserver {
  const slice = createRoundRobin(deps.perTick ?? 100);
  return {
    name: 'live-config',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 5_000,
    async sample() {
      for (const [id, e] of slice([...deps.live.entries()])) {
        const files = deps.look.driftedCgroupFiles(e.cgroup);
        if (files.length > 0) {
          deps.report(CONTAINER_KIND, id, `cgroup ${files.map((f) => f.split('/').pop()).join(', ')} changed`);
          continue;
        }
        const nics = await missingNics(deps.look, e.pid, e.nics);
        if (nics.length > 0) {
          deps.report(CONTAINER_KIND, id, `nic ${nics.join(', ')} missing`);
          continue;
        }
        const targets = Object.keys(e.mounts);
        if (targets.length === 0) continue;
        let present: ReturnType<LiveLookAdapter['readMounts']>;
        try {
          present = deps.look.readMounts(e.pid);
        } catch {
          continue; // stopped meanwhile: the container observer sees to that
        }
        const gone = targets.filter((t) => present.get(t)?.readonly !== e.mounts[t]!.readonly);
        if (gone.length > 0) deps.report(CONTAINER_KIND, id, `mount ${gone.join(', ')} missing or changed`);
      }
    },
  };
}

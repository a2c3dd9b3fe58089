import { CONTAINER_KIND } from '../desired/containers.ts';
import { driftedCgroupFiles } from '../host/lxc/live-cgroup.ts';
import { readContainerMounts } from '../host/lxc/live-mounts.ts';
import type { LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import type { PollObserver } from './types.ts';

export interface LiveDriftObserverDeps {
  live: LiveRegistry;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
}

/**
 * Compares what each running container has with what svcd last applied to it (ensure-live.ts): a cgroup
 * limit changed behind svcd's back, or a device mount that is gone, is drift, and the reconcile puts it back.
 * File reads only (a few cgroup files and one mountinfo per container with live mounts), no process.
 */
export function createLiveDriftObserver(deps: LiveDriftObserverDeps): PollObserver {
  return {
    name: 'live-config',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 5_000,
    async sample() {
      for (const [id, e] of deps.live.entries()) {
        const files = driftedCgroupFiles(e.cgroup);
        if (files.length > 0) {
          deps.report(CONTAINER_KIND, id, `cgroup ${files.map((f) => f.split('/').pop()).join(', ')} changed`);
          continue;
        }
        const targets = Object.keys(e.mounts);
        if (targets.length === 0) continue;
        let present: ReturnType<typeof readContainerMounts>;
        try {
          present = readContainerMounts(e.pid);
        } catch {
          continue; // stopped meanwhile: the container observer sees to that
        }
        const gone = targets.filter((t) => present.get(t)?.readonly !== e.mounts[t]!.readonly);
        if (gone.length > 0) deps.report(CONTAINER_KIND, id, `mount ${gone.join(', ')} missing or changed`);
      }
    },
  };
}

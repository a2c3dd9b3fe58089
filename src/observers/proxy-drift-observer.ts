import { CONTAINER_KIND } from '../desired/containers.ts';
import type { ProxyAdapter } from '../reconcilers/adapters.ts';
import type { LiveRegistry } from '../reconcilers/container/ensure-live.ts';
import type { PollObserver } from './types.ts';

export interface ProxyDriftObserverDeps {
  live: LiveRegistry;
  proxy: Pick<ProxyAdapter, 'liveForwarders'>;
  report: (kind: string, key: string, what: string) => void;
  intervalMs?: number;
}

/**
 * A proxy device's forwarder that died (killed, crashed) is drift: each running container whose proxy
 * devices should have forwarders (ensure-proxies.ts, via the live registry) is compared with its live
 * forwarders (pid files and /proc, no process spawned), and the reconcile starts the missing ones again.
 */
export function createProxyDriftObserver(deps: ProxyDriftObserverDeps): PollObserver {
  return {
    name: 'proxy-forwarders',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 1_000,
    async sample() {
      for (const [id, e] of deps.live.entries()) {
        if (!e.proxies?.length) continue;
        const running = await deps.proxy.liveForwarders(id);
        const dead = e.proxies.filter((d) => !running.has(d));
        if (dead.length > 0) deps.report(CONTAINER_KIND, id, `proxy forwarder of ${dead.join(', ')} not running`);
      }
    },
  };
}

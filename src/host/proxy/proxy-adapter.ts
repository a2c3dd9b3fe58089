/**
 * The ProxyAdapter of the reconcilers (reconcilers/adapters.ts) on the real host: the forwarders of
 * forwarder-process.ts, and nat mode through the `applyNat` it is given (proxy-nat.ts).
 */
import type { ProxyAdapter } from '../../reconcilers/adapters.ts';
import {
  listForwarders,
  readForwarder,
  startForwarder,
  stopForwarder,
  type ForwarderDeps,
} from './forwarder-process.ts';
import { forwarderKey } from './forwarder-args.ts';

export interface ProxyAdapterDeps extends ForwarderDeps {
  /** nat mode: a container's DNAT rules set or removed (host/proxy/proxy-nat.ts). */
  applyNat: ProxyAdapter['applyNat'];
}

export function createProxyAdapter(deps: ProxyAdapterDeps): ProxyAdapter {
  return {
    async ensureForwarder(spec, signal) {
      const live = await readForwarder(spec.containerId, spec.device, deps);
      if (live && live.key === forwarderKey(spec)) return { pid: live.pid, started: false };
      signal?.throwIfAborted();
      await stopForwarder(spec.containerId, spec.device, deps);
      signal?.throwIfAborted();
      return { pid: await startForwarder(spec, deps), started: true };
    },
    stopForwarder: (containerId, device) => stopForwarder(containerId, device, deps),
    async liveForwarders(containerId) {
      const live = await listForwarders(containerId, deps);
      return new Map([...live].map(([device, f]) => [device, f.pid]));
    },
    applyNat: (containerId, rules, signal) => deps.applyNat(containerId, rules, signal),
  };
}

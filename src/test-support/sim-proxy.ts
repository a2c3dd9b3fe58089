/**
 * Proxy devices in memory, for component tests: the ProxyAdapter of src/reconcilers/adapters.ts. Each
 * forwarder is its spec and a pid; `kill` makes one die (as kill -9 would), `refuse` makes the next
 * start of a device fail with the forwarder's error text (an address in use); the nat rules are kept
 * per container as last applied.
 */
import type { ForwarderSpec, NatRule } from '../host/proxy/types.ts';
import type { ProxyAdapter } from '../reconcilers/adapters.ts';
import { createSimCalls, type SimCalls } from './sim-calls.ts';

export interface SimProxy extends ProxyAdapter, Pick<SimCalls, 'calls' | 'failOnce'> {
  /** container id → device → the running forwarder. */
  readonly forwarders: Map<string, Map<string, { spec: ForwarderSpec; pid: number }>>;
  /** container id → its nat rules (absent: none). */
  readonly nat: Map<string, readonly NatRule[]>;
  kill(containerId: string, device: string): void;
  refuse(device: string, error: string): void;
}

export function createSimProxy(): SimProxy {
  const calls = createSimCalls('sim-proxy');
  const forwarders = new Map<string, Map<string, { spec: ForwarderSpec; pid: number }>>();
  const nat = new Map<string, readonly NatRule[]>();
  const refusals = new Map<string, string>();
  let nextPid = 50_000;
  const of = (id: string) => forwarders.get(id) ?? forwarders.set(id, new Map()).get(id)!;
  return {
    calls: calls.calls,
    failOnce: calls.failOnce,
    forwarders,
    nat,
    kill: (id, device) => void forwarders.get(id)?.delete(device),
    refuse: (device, error) => void refusals.set(device, error),
    async ensureForwarder(spec) {
      calls.enter('ensureForwarder');
      const cur = of(spec.containerId).get(spec.device);
      if (cur && JSON.stringify(cur.spec) === JSON.stringify(spec)) return { pid: cur.pid, started: false };
      of(spec.containerId).delete(spec.device);
      const refusal = refusals.get(spec.device);
      if (refusal !== undefined) {
        refusals.delete(spec.device);
        throw new Error(refusal);
      }
      const pid = nextPid++;
      of(spec.containerId).set(spec.device, { spec: { ...spec }, pid });
      return { pid, started: true };
    },
    async stopForwarder(id, device) {
      calls.enter('stopForwarder');
      forwarders.get(id)?.delete(device);
    },
    async liveForwarders(id) {
      calls.enter('liveForwarders');
      return new Map([...(forwarders.get(id) ?? [])].map(([d, f]) => [d, f.pid]));
    },
    async applyNat(id, rules) {
      calls.enter('applyNat');
      if (rules.length)
        nat.set(
          id,
          rules.map((r) => ({ ...r })),
        );
      else nat.delete(id);
    },
  };
}

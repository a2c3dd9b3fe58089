/**
 * LXC in memory, for component tests of the container reconciler: the LxcAdapter and LxcLiveAdapter of
 * src/reconcilers/adapters.ts, and the observers' LiveLookAdapter. The simulated host is sim-lxc-world.ts;
 * cgroups and mounts are sim-lxc-live.ts, nics sim-lxc-nics.ts; this file is the lifecycle. Each container is STOPPED, RUNNING or FROZEN with an init pid, remembers
 * the config file it was started with, and has cgroup values and mounts of its own. It refuses what LXC
 * refuses: `lxc-start` of a container that is up or has no config, freezing or thawing one that is not
 * running; stopping a stopped one is success, as it is for lxc-stop.
 */
import { readFileSync } from 'node:fs';
import { ContainerStartError } from '../host/lxc/lxc-errors.ts';
import type { LiveNic } from '../host/lxc/live-nics.ts';
import type { FilteredNic } from '../host/lxc/nic-filter.ts';
import type { NicLimits } from '../host/lxc/nic-limits.ts';
import type { LiveLookAdapter } from '../observers/adapters.ts';
import type { LxcAdapter, LxcLiveAdapter } from '../reconcilers/adapters.ts';
import type { SimCalls } from './sim-calls.ts';
import { createSimLxcCgroupsAndMounts } from './sim-lxc-live.ts';
import { createSimLxcNics } from './sim-lxc-nics.ts';
import { createSimLxcWorld, type SimContainer, type SimVeth } from './sim-lxc-world.ts';

export type { SimContainer, SimVeth };

/** The nics a rendered LXC config names (lxc.net.N.*). */
function nicsOfConfig(text: string): (LiveNic & { index: string; type: string })[] {
  const byIndex = new Map<string, Record<string, string>>();
  for (const m of text.matchAll(/^lxc\.net\.(\d+)\.([a-z.]+) = (.*)$/gm)) {
    const e = byIndex.get(m[1]!) ?? {};
    e[m[2]!] = m[3]!;
    byIndex.set(m[1]!, e);
  }
  return [...byIndex].map(([index, e]) => ({
    index,
    type: e.type ?? 'veth',
    hostName: e['veth.pair'] ?? `veth-sim${index}`,
    name: e.name ?? `eth${index}`,
    parent: e.link ?? '',
    hwaddr: e.hwaddr ?? '',
    ...(e.mtu ? { mtu: Number(e.mtu) } : {}),
  }));
}

export interface SimLxc extends LxcAdapter, LxcLiveAdapter, LiveLookAdapter, Pick<SimCalls, 'calls' | 'failOnce'> {
  readonly containers: Map<string, SimContainer>;
  /** Behind svcd's back (drift): the container's init dies, or someone freezes it. */
  kill(name: string): void;
  freezeBehind(name: string): void;
  /** The host's bridges: a nic joins only one of these. */
  readonly bridges: Set<string>;
  /** Host-side veths by name. */
  readonly veths: Map<string, SimVeth>;
  /** The host's other interfaces (macvlan and physical parents); a physical one leaves while in a container. */
  readonly links: Set<string>;
  /** tc limits, MAC filters and host routes svcd set, by veth (routes: `<cidr> via <addr> dev <bridge>`). */
  readonly nicLimits: Map<string, NicLimits>;
  readonly nicFilters: Map<string, FilteredNic>;
  readonly routes: Set<string>;
}

export function createSimLxc(): SimLxc {
  const w = createSimLxcWorld();
  const { sim, containers, get, up, halt, plug, plugInside, newPid } = w;
  const { bridges, veths, links, nicLimits, nicFilters, routes } = w;
  const lxc: SimLxc = {
    calls: sim.calls,
    failOnce: sim.failOnce,
    containers,
    async state(ref) {
      sim.enter('state');
      const c = get(ref.name);
      return c && c.state !== 'STOPPED' ? { state: c.state, pid: c.pid } : { state: 'STOPPED' };
    },
    async start(input) {
      sim.enter('start');
      const c = get(input.name);
      if (c && c.state === 'RUNNING' && !input.knownStopped) return { state: 'RUNNING', pid: c.pid };
      if (c && c.state !== 'STOPPED')
        throw new ContainerStartError(`container ${input.name} failed to start: it is already running`, '');
      let text: string;
      try {
        text = readFileSync(input.configFile, 'utf8');
      } catch (e) {
        throw new ContainerStartError(`container ${input.name} failed to start: no config ${input.configFile}`, '', {
          cause: e,
        });
      }
      const pid = newPid();
      const started: SimContainer = {
        state: 'RUNNING',
        pid,
        startedWith: text,
        cgroup: new Map(),
        mounts: new Map(),
        nics: new Map(),
      };
      try {
        for (const nic of nicsOfConfig(text)) {
          if (nic.type === 'veth') plug(input.name, started, nic);
          else plugInside(started, { ...nic, nictype: nic.type === 'phys' ? 'physical' : 'macvlan' }, true);
        }
      } catch (e) {
        halt(started);
        throw new ContainerStartError(`container ${input.name} failed to start: ${(e as Error).message}`, '', {
          cause: e,
        });
      }
      containers.set(input.name, started);
      return { state: 'RUNNING', pid };
    },
    async stop(input) {
      sim.enter('stop');
      const c = get(input.name);
      if (!c || c.state === 'STOPPED') return { forced: false };
      halt(c);
      return { forced: !!input.force };
    },
    async freeze(ref) {
      sim.enter('freeze');
      up(ref.name, 'lxc-freeze').state = 'FROZEN';
    },
    async unfreeze(ref) {
      sim.enter('unfreeze');
      up(ref.name, 'lxc-unfreeze').state = 'RUNNING';
    },
    async list(_lxcPath, _signal, names) {
      sim.enter('list');
      const only = names && new Set(names);
      return [...containers]
        .filter(([name]) => !only || only.has(name))
        .map(([name, c]) => ({ name, state: c.state, ...(c.pid ? { pid: c.pid } : {}) }));
    },
    async removeLeftovers() {
      sim.enter('removeLeftovers');
    },

    ...createSimLxcCgroupsAndMounts(w),
    ...createSimLxcNics(w),
    bridges,
    veths,
    links,
    nicLimits,
    nicFilters,
    routes,

    kill(name) {
      const c = get(name);
      if (c) halt(c);
    },
    freezeBehind(name) {
      up(name, 'freeze').state = 'FROZEN';
    },
  };
  return lxc;
}

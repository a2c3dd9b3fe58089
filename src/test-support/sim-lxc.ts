/**
 * LXC in memory, for component tests of the container reconciler: the LxcAdapter and LxcLiveAdapter of
 * src/reconcilers/adapters.ts. Each container is STOPPED, RUNNING or FROZEN with an init pid, remembers
 * the config file it was started with, and has cgroup values and mounts of its own. It refuses what LXC
 * refuses: `lxc-start` of a container that is up or has no config, freezing or thawing one that is not
 * running; stopping a stopped one is success, as it is for lxc-stop.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { CgroupSetting, ContainerCgroups } from '../host/lxc/live-cgroup.ts';
import type { LiveMount } from '../host/lxc/live-mounts.ts';
import type { LxcState } from '../host/lxc/lxc-args.ts';
import { ContainerStartError } from '../host/lxc/lxc-errors.ts';
import type { LxcAdapter, LxcLiveAdapter } from '../reconcilers/adapters.ts';
import type { LiveLookAdapter } from '../observers/adapters.ts';
import type { InsideNic } from '../host/lxc/live-nic-types.ts';
import type { LiveNic } from '../host/lxc/live-nics.ts';
import type { FilteredNic } from '../host/lxc/nic-filter.ts';
import type { NicLimits } from '../host/lxc/nic-limits.ts';
import { createSimCalls, type SimCalls } from './sim-calls.ts';

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

export interface SimContainer {
  state: LxcState;
  pid: number;
  /** The config file's text when it was last started. */
  startedWith?: string;
  /** cgroup file (under /sim) → value. */
  cgroup: Map<string, string>;
  /** Mounted targets inside it. */
  mounts: Map<string, { readonly: boolean; source: string }>;
  /** Its nics inside: name → MAC, MTU and the host-side veth ('' for a macvlan or physical: `parent`, moved in by LXC or live). */
  nics: Map<
    string,
    {
      hwaddr: string;
      mtu?: number | undefined;
      hostName: string;
      parent?: string;
      kind?: 'macvlan' | 'physical';
      byLxc?: boolean;
    }
  >;
}

/** A host-side veth: the container (by id) whose peer it is, and the bridge it is on. */
export interface SimVeth {
  container: string;
  peer: string;
  master: string;
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
  const sim = createSimCalls('sim lxc');
  const containers = new Map<string, SimContainer>();
  let nextPid = 1000;
  const get = (name: string) => containers.get(name);
  const byPid = (pid: number) => {
    for (const [name, c] of containers) if (c.pid === pid && c.state !== 'STOPPED') return { name, c };
    throw new Error(`no process ${pid}`);
  };
  const up = (name: string, what: string) => {
    const c = get(name);
    if (!c || c.state === 'STOPPED') throw new Error(`${what}: ${name} is not running`);
    return c;
  };
  const bridges = new Set<string>();
  const veths = new Map<string, SimVeth>();
  const links = new Set<string>();
  const nicLimits = new Map<string, NicLimits>();
  const nicFilters = new Map<string, FilteredNic>();
  const routes = new Set<string>();
  /** Host interfaces' ifindexes (given on first sight); an interface keeps its own across moves. */
  const ifindexes = new Map<string, number>();
  const ifindexOf = (link: string) =>
    ifindexes.get(link) ?? (ifindexes.set(link, ifindexes.size + 2), ifindexes.size + 1);
  /** Its netns goes: each veth pair with it (what svcd set around them stays, as on a host). */
  const halt = (c: SimContainer) => {
    for (const n of c.nics.values()) veths.delete(n.hostName);
    // LXC gives back the physical nics of its config; one moved in live comes back (real hardware) under its inside name.
    for (const [name, n] of c.nics) {
      if (n.kind !== 'physical') continue;
      links.add(n.byLxc ? n.parent! : name);
      if (!n.byLxc) ifindexes.set(name, ifindexOf(n.parent!));
    }
    return Object.assign(c, { state: 'STOPPED', pid: 0, mounts: new Map(), cgroup: new Map(), nics: new Map() });
  };
  const plug = (name: string, c: SimContainer, nic: LiveNic) => {
    if (veths.has(nic.hostName)) throw new Error(`RTNETLINK answers: File exists (${nic.hostName})`);
    if (nic.parent && !bridges.has(nic.parent)) throw new Error(`Cannot find device "${nic.parent}"`);
    if (c.nics.has(nic.name)) throw new Error(`RTNETLINK answers: File exists (${nic.name} in the container)`);
    veths.set(nic.hostName, { container: name, peer: nic.name, master: nic.parent });
    c.nics.set(nic.name, {
      hwaddr: nic.hwaddr,
      hostName: nic.hostName,
      ...(nic.mtu !== undefined ? { mtu: nic.mtu } : {}),
    });
  };

  const plugInside = (c: SimContainer, nic: InsideNic & { nictype: 'macvlan' | 'physical' }, byLxc: boolean) => {
    if (!links.has(nic.parent)) throw new Error(`Cannot find device "${nic.parent}"`);
    if (c.nics.has(nic.name)) throw new Error(`RTNETLINK answers: File exists (${nic.name} in the container)`);
    if (nic.nictype === 'physical') links.delete(nic.parent);
    c.nics.set(nic.name, {
      hwaddr: nic.hwaddr,
      hostName: '',
      parent: nic.parent,
      kind: nic.nictype,
      byLxc,
      ...(nic.mtu !== undefined ? { mtu: nic.mtu } : {}),
    });
  };

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
      const pid = ++nextPid;
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

    async locateCgroups(pid): Promise<ContainerCgroups> {
      sim.enter('locateCgroups');
      const { name } = byPid(pid);
      return { dirOf: (controller) => path.join('/sim/cgroup', controller ?? 'unified', `lxc.payload.${name}`) };
    },
    applyCgroupSettings(cg, settings: readonly CgroupSetting[]) {
      sim.enter('applyCgroupSettings');
      const applied: Record<string, string> = {};
      for (const s of settings) {
        const dir = cg.dirOf(s.controller);
        if (!dir || typeof s.value !== 'string') continue;
        const { c } = byPid(pidOfDir(dir));
        const file = path.join(dir, s.file);
        c.cgroup.set(file, s.value);
        applied[file] = s.value;
      }
      return applied;
    },
    setDeviceAccess(cg, rule, allow) {
      sim.enter('setDeviceAccess');
      const dir = cg.dirOf('devices')!;
      byPid(pidOfDir(dir)).c.cgroup.set(path.join(dir, allow ? 'devices.allow' : 'devices.deny'), rule);
    },
    baseAllowedDevices: () => [],
    driftedCgroupFiles(applied) {
      // A file of no running container: it is gone with it, not drift of a limit.
      const now = (file: string) => {
        for (const c of containers.values()) if (c.state !== 'STOPPED' && c.cgroup.has(file)) return c.cgroup.get(file);
        return undefined;
      };
      return Object.entries(applied)
        .filter(([file, value]) => now(file) !== undefined && now(file) !== value)
        .map(([file]) => file);
    },
    readMounts(pid) {
      const { c } = byPid(pid);
      return new Map([...c.mounts].map(([t, m]) => [t, { readonly: m.readonly, root: m.source }]));
    },
    async attachMount(pid, m: LiveMount) {
      sim.enter('attachMount');
      byPid(pid).c.mounts.set(`/${m.target.replace(/^\/+/, '')}`, { readonly: !!m.readonly, source: m.source });
    },
    async detachMount(pid, target) {
      sim.enter('detachMount');
      byPid(pid).c.mounts.delete(`/${target.replace(/^\/+/, '')}`);
    },

    async attachNic(pid, nic) {
      sim.enter('attachNic');
      const { name, c } = byPid(pid);
      plug(name, c, nic);
    },
    async detachNic(hostName) {
      sim.enter('detachNic');
      const v = veths.get(hostName);
      if (!v) return;
      veths.delete(hostName);
      containers.get(v.container)?.nics.delete(v.peer);
    },
    async readHostVeth(hostName) {
      const v = veths.get(hostName);
      return v && { master: bridges.has(v.master) ? v.master : '' };
    },
    async adoptNic(pid, nic) {
      sim.enter('adoptNic');
      const { c } = byPid(pid);
      const inside = c.nics.get(nic.name);
      const v = inside && veths.get(inside.hostName);
      if (!inside || !v) return undefined;
      veths.delete(inside.hostName);
      veths.set(nic.hostName, v);
      inside.hostName = nic.hostName;
      return { hwaddr: inside.hwaddr, mtu: inside.mtu ?? 1500 };
    },
    async rejoinBridge(nic) {
      sim.enter('rejoinBridge');
      const v = veths.get(nic.hostName);
      if (!v) throw new Error(`Cannot find device "${nic.hostName}"`);
      if (!bridges.has(nic.parent)) throw new Error(`Cannot find device "${nic.parent}"`);
      v.master = nic.parent;
    },
    async applyNicLimits(hostName, limits) {
      sim.enter('applyNicLimits');
      if (limits.ingressBits || limits.egressBits) {
        if (!veths.has(hostName)) throw new Error(`Cannot find device "${hostName}"`);
        nicLimits.set(hostName, { ...limits });
      } else nicLimits.delete(hostName);
    },
    async applyNicFilter(hostName, nic) {
      sim.enter('applyNicFilter');
      if (nic) nicFilters.set(hostName, { ...nic });
      else nicFilters.delete(hostName);
    },
    async applyNicRoutes(verb, list, via, bridge) {
      sim.enter('applyNicRoutes');
      for (const r of list) {
        const line = via ? `${r} via ${r.includes(':') ? via.ipv6 : via.ipv4} dev ${bridge}` : `${r} dev ${bridge}`;
        if (verb === 'replace') routes.add(line);
        else routes.delete(line);
      }
    },
    async attachInsideNic(pid, nic) {
      sim.enter('attachInsideNic');
      const was =
        nic.nictype === 'physical'
          ? { hwaddr: `sim:${nic.parent}`, mtu: 1500, ifindex: ifindexOf(nic.parent) }
          : undefined;
      plugInside(byPid(pid).c, nic, false);
      return was;
    },
    async detachInsideNic(pid, nic) {
      sim.enter('detachInsideNic');
      const { c } = byPid(pid);
      const n = c.nics.get(nic.name);
      if (!n?.kind) return;
      c.nics.delete(nic.name);
      if (n.kind === 'physical') links.add(n.parent!);
    },
    async reclaimPhysical(parent, was) {
      sim.enter('reclaimPhysical');
      const back = [...links].find((l) => ifindexOf(l) === was.ifindex);
      if (links.has(parent)) return true;
      if (!back) return false;
      links.delete(back);
      links.add(parent);
      ifindexes.set(parent, was.ifindex!);
      return true;
    },
    readPhysical: async (name) =>
      links.has(name) ? { hwaddr: `sim:${name}`, mtu: 1500, ifindex: ifindexOf(name) } : undefined,
    hostHasLink: async (name) => links.has(name) || bridges.has(name) || veths.has(name),
    async readContainerLinks(pid) {
      for (const c of containers.values()) if (c.pid === pid && c.state !== 'STOPPED') return new Set(c.nics.keys());
      return undefined;
    },
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
  /** The pid of the container a simulated cgroup directory belongs to. */
  function pidOfDir(dir: string): number {
    const name = path.basename(dir).replace(/^lxc\.payload\./, '');
    const c = get(name);
    if (!c || c.state === 'STOPPED') throw new Error(`cgroup ${dir} is gone`);
    return c.pid;
  }
  return lxc;
}

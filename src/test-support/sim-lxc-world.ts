/** The simulated host LXC acts on, shared by the simulated lifecycle, cgroups, mounts and nics (sim-lxc.ts). */
import path from 'node:path';
import type { InsideNic } from '../host/lxc/live-nic-types.ts';
import type { LiveNic } from '../host/lxc/live-nics.ts';
import type { LxcState } from '../host/lxc/lxc-args.ts';
import type { FilteredNic } from '../host/lxc/nic-filter.ts';
import type { NicLimits } from '../host/lxc/nic-limits.ts';
import { createSimCalls } from './sim-calls.ts';

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

export type SimLxcWorld = ReturnType<typeof createSimLxcWorld>;

export function createSimLxcWorld() {
  const sim = createSimCalls('sim lxc');
  const containers = new Map<string, SimContainer>();
  let nextPid = 1000;
  const newPid = () => ++nextPid;
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
  /** The pid of the container a simulated cgroup directory belongs to. */
  function pidOfDir(dir: string): number {
    const name = path.basename(dir).replace(/^lxc\.payload\./, '');
    const c = get(name);
    if (!c || c.state === 'STOPPED') throw new Error(`cgroup ${dir} is gone`);
    return c.pid;
  }
  return {
    sim,
    containers,
    newPid,
    get,
    byPid,
    up,
    bridges,
    veths,
    links,
    nicLimits,
    nicFilters,
    routes,
    ifindexes,
    ifindexOf,
    halt,
    plug,
    plugInside,
    pidOfDir,
  };
}

/** The simulated nics of running containers (sim-lxc.ts): veths on bridges, macvlan and physical interfaces. */
import type { LxcNicsAdapter } from '../reconcilers/adapters.ts';
import type { SimLxcWorld } from './sim-lxc-world.ts';

export function createSimLxcNics(w: SimLxcWorld): LxcNicsAdapter {
  const { sim, containers, byPid, plug, plugInside, bridges, veths, links, nicLimits, nicFilters, routes } = w;
  const { ifindexes, ifindexOf } = w;
  return {
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
  };
}

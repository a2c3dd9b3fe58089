/**
 * Managed networks in memory, for component tests: the NetworkAdapter of src/reconcilers/adapters.ts.
 * A network exists once ensured (its bridge joins `bridges`, which the LXC simulator can share), with
 * its spec, its DHCP host entries (key → entry) and whether its dnsmasq runs. It refuses what the real
 * one refuses: a DHCP host entry for a network that was never set up (no directory), an entry without
 * a MAC or hostname, a bridge name longer than 15 characters.
 */
import type { NetworkAdapter } from '../reconcilers/adapters.ts';
import type { DhcpHostEntry, NetworkSpec } from '../host/network/types.ts';
import { createSimCalls, type SimCalls } from './sim-calls.ts';

export interface SimNetwork extends NetworkAdapter, Pick<SimCalls, 'calls' | 'failOnce'> {
  readonly networks: Map<string, { spec: NetworkSpec; dnsmasq: boolean }>;
  /** Network name → its DHCP host entries by key (`<container id>.<device>`). */
  readonly dhcpHosts: Map<string, Map<string, DhcpHostEntry>>;
  readonly bridges: Set<string>;
  /** The specs the firewall was last applied with. */
  firewall: string[];
  /** Behind svcd's back: the bridge goes (its dnsmasq with it). */
  deleteBridge(name: string): void;
}

export function createSimNetwork({ bridges = new Set<string>() }: { bridges?: Set<string> } = {}): SimNetwork {
  const sim = createSimCalls('sim network');
  const networks = new Map<string, { spec: NetworkSpec; dnsmasq: boolean }>();
  const dhcpHosts = new Map<string, Map<string, DhcpHostEntry>>();
  const known = (spec: Pick<NetworkSpec, 'name' | 'dir'>) => {
    if (!dhcpHosts.has(spec.name)) throw new Error(`${spec.dir}/dnsmasq.hosts: No such file or directory`);
    return dhcpHosts.get(spec.name)!;
  };
  const net: SimNetwork = {
    calls: sim.calls,
    failOnce: sim.failOnce,
    networks,
    dhcpHosts,
    bridges,
    firewall: [],
    async ensureNetwork(spec) {
      sim.enter('ensureNetwork');
      if (spec.name.length > 15) throw new Error(`ip link add ${spec.name}: name too long`);
      networks.set(spec.name, { spec, dnsmasq: true });
      bridges.add(spec.name);
      if (!dhcpHosts.has(spec.name)) dhcpHosts.set(spec.name, new Map());
    },
    async removeNetwork(name) {
      sim.enter('removeNetwork');
      networks.delete(name);
      bridges.delete(name);
      dhcpHosts.delete(name);
    },
    async applyFirewall(specs) {
      sim.enter('applyFirewall');
      net.firewall = specs.map((s) => s.name).sort();
    },
    async health(spec) {
      const n = networks.get(spec.name);
      if (!n || !bridges.has(spec.name)) return `bridge ${spec.name} is missing`;
      return n.dnsmasq ? undefined : `dnsmasq of ${spec.name} is not running`;
    },
    async setDhcpHost(spec, key, entry) {
      sim.enter('setDhcpHost');
      const hosts = known(spec);
      if (!entry) return void hosts.delete(key);
      if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(entry.hwaddr) || !entry.hostname)
        throw new Error(`bad DHCP host entry ${JSON.stringify(entry)}`);
      hosts.set(key, { ...entry });
    },
    async pruneDhcpHosts(spec, keep) {
      sim.enter('pruneDhcpHosts');
      const hosts = known(spec);
      for (const k of [...hosts.keys()]) if (!keep.has(k)) hosts.delete(k);
    },
    deleteBridge(name) {
      bridges.delete(name);
      const n = networks.get(name);
      if (n) n.dnsmasq = false;
    },
  };
  return net;
}

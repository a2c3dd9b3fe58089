/**
 * The networks API's view of the host (NetworkHost, api/host-service.ts): its interfaces and their
 * state read from /sys and /proc (no process spawned), dnsmasq's dynamic leases, the subnets in use,
 * and probes of the features network keys need (a probe that has to try `ip link add` runs once per
 * host object and is remembered).
 */
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ProbeResult } from '../storage/driver-catalog.ts';
import type { NetworkHost } from '../../api/host-service.ts';
import { runCommand } from '../exec.ts';
import { readNamespaceInterfaces } from '../lxc/network-stats.ts';
import { createHostChecker } from '../storage/host-checker.ts';
import { parseDnsmasqLeases } from './parse-dnsmasq-leases.ts';
import type { HostInterface, NetworkFeature } from './types.ts';
import { usedSubnetsFrom } from './used-subnets.ts';

export interface NetworkHostDeps {
  /** Default /proc. */
  procRoot?: string;
  /** Default /sys. */
  sysRoot?: string;
  /** Is this tool installed? Default: a look along root's usual PATH (no spawn). */
  which?: (tool: string) => Promise<boolean>;
  /** Runs `ip` for the probes that must try a link type; default host/exec.ts runCommand. */
  run?: (file: string, args: readonly string[]) => Promise<string>;
}

const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );
const readText = (p: string) => readFile(p, 'utf8').catch(() => '');
const safeName = (name: string) => name !== '' && !name.includes('/') && name !== '.' && name !== '..';

/** LXD's type word for one /sys/class/net entry. */
async function interfaceType(dir: string, name: string): Promise<string> {
  if (name === 'lo' || (await readText(path.join(dir, 'type'))).trim() === '772') return 'loopback';
  if (await exists(path.join(dir, 'bridge'))) return 'bridge';
  if (await exists(path.join(dir, 'bonding'))) return 'bond';
  if (await exists(path.join(dir, 'device'))) return 'physical';
  return 'unknown';
}

/** How a link type is tried: `ip link add <name> type …` (created down, never given an address, deleted at once). */
const LINK_TRIALS: Record<'gre' | 'vxlan', { args: (name: string) => string[]; missing: string }> = {
  gre: {
    args: (n) => ['link', 'add', n, 'type', 'gre', 'local', '192.0.2.1', 'remote', '192.0.2.2', 'ttl', '64'],
    missing: 'GRE tunnels (kernel module ip_gre)',
  },
  vxlan: {
    args: (n) => ['link', 'add', n, 'type', 'vxlan', 'id', '2', 'dstport', '4789'],
    missing: 'VXLAN tunnels (kernel module vxlan)',
  },
};

export function createNetworkHost(deps: NetworkHostDeps = {}): NetworkHost {
  const procRoot = deps.procRoot ?? '/proc';
  const sysNet = path.join(deps.sysRoot ?? '/sys', 'class/net');
  const procNet = path.join(procRoot, 'net');
  const which = deps.which ?? ((tool: string) => createHostChecker().hasTool(tool));
  const run = deps.run ?? ((file: string, args: readonly string[]) => runCommand(file, args, { timeoutMs: 10_000 }));
  const probes = new Map<NetworkFeature, Promise<ProbeResult>>();
  const tmpName = (tag: string) => `svp${tag}${process.pid % 1_000_000}`;

  /** Create a link of this type and delete it again: does the kernel know the type? */
  async function tryLink(args: string[], name: string, missing: string, cleanup: string[] = []): Promise<ProbeResult> {
    try {
      await run('ip', args);
      return { ok: true };
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      return {
        ok: false,
        missing: [
          /Unknown device type|not supported|Operation not supported/i.test(why) ? missing : `${missing}: ${why}`,
        ],
      };
    } finally {
      for (const n of [name, ...cleanup]) await run('ip', ['link', 'delete', n]).catch(() => {});
    }
  }

  async function probeNow(feature: NetworkFeature): Promise<ProbeResult> {
    switch (feature) {
      case 'openvswitch':
        return (await which('ovs-vsctl'))
          ? { ok: true }
          : { ok: false, missing: ['Open vSwitch (the ovs-vsctl tool)'] };
      case 'gre':
      case 'vxlan': {
        const name = tmpName(feature[0]!);
        return tryLink(LINK_TRIALS[feature].args(name), name, LINK_TRIALS[feature].missing);
      }
      case 'vlan': {
        if (await exists(path.join(procNet, 'vlan/config'))) return { ok: true };
        // loopback refuses VLANs even with 8021q: the trial VLAN sits on a bridge made for it
        const parent = tmpName('q');
        const name = tmpName('v');
        try {
          await run('ip', ['link', 'add', parent, 'type', 'bridge']);
        } catch (e) {
          return { ok: false, missing: [`802.1Q VLANs: ${e instanceof Error ? e.message : String(e)}`] };
        }
        return tryLink(
          ['link', 'add', 'link', parent, 'name', name, 'type', 'vlan', 'id', '2'],
          name,
          '802.1Q VLANs (kernel module 8021q)',
          [parent],
        );
      }
      case 'fan':
        return (await exists(path.join(procRoot, 'sys/net/fan')))
          ? { ok: true }
          : { ok: false, missing: ['the Ubuntu fan kernel patch (/proc/sys/net/fan)'] };
      case 'maas':
        return { ok: false, missing: ['a MAAS server (maas.api.url)'] };
    }
  }

  return {
    async interfaces(): Promise<HostInterface[]> {
      const names = (await readdir(sysNet).catch(() => [] as string[])).sort();
      return Promise.all(
        names.map(async (name) => ({ name, type: await interfaceType(path.join(sysNet, name), name) })),
      );
    },

    async state(name) {
      if (!safeName(name)) return undefined;
      const found = (await readNamespaceInterfaces({ net: procNet, sysNet }, name)).get(name);
      if (!found) return undefined;
      const c = found.counters;
      return {
        addresses: found.addresses,
        counters: {
          bytes_received: c.bytesReceived,
          bytes_sent: c.bytesSent,
          packets_received: c.packetsReceived,
          packets_sent: c.packetsSent,
        },
        hwaddr: found.hwaddr ?? '',
        mtu: found.mtu ?? 0,
        state: found.state ?? 'down',
        type: found.type ?? 'broadcast',
      };
    },

    async leases(network) {
      return parseDnsmasqLeases(await readText(path.join(network.dir, 'dnsmasq.leases')));
    },

    probe(feature) {
      let p = probes.get(feature);
      if (!p) probes.set(feature, (p = probeNow(feature)));
      return p;
    },

    async usedSubnets() {
      const [route, ipv6Route, fibTrie, ifInet6] = await Promise.all(
        ['route', 'ipv6_route', 'fib_trie', 'if_inet6'].map((f) => readText(path.join(procNet, f))),
      );
      return usedSubnetsFrom({ route: route!, ipv6Route: ipv6Route!, fibTrie: fibTrie!, ifInet6: ifInet6! });
    },
  };
}

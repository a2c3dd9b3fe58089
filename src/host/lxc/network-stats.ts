/**
 * A container's interfaces, counters and addresses, read through its init's /proc/<pid>/net (which is
 * the container's network namespace) and its /sys — no process spawned, no netns entered. Addresses
 * come from if_inet6 (IPv6) and fib_trie + route (IPv4), best effort.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseLinkFlags } from './parse-link-flags.ts';
import {
  ipv4AddressesByInterface,
  parseFibTrieLocal,
  parseIfInet6,
  parseIpv4Routes,
  parseNetDev,
  type NetworkAddress,
  type NetworkCounters,
} from './parse-proc-net.ts';

export interface InterfaceState {
  hwaddr?: string;
  mtu?: number;
  state?: 'up' | 'down';
  type?: 'loopback' | 'broadcast' | 'point-to-point' | 'unknown';
}

export interface InterfaceStats extends InterfaceState {
  addresses: NetworkAddress[];
  counters: NetworkCounters;
  /** The host side of a veth pair (found by the peer's ifindex on the host). */
  hostName?: string;
}

export interface NetworkRoots {
  /** Default /proc. */
  procRoot?: string;
  /** The host's /sys (default /sys). */
  sysRoot?: string;
}

/**
 * procfs and sysfs are generated in memory: read synchronously (~20 µs a file, where each async read is four
 * thread-pool round trips: a state request reads some thirty files).
 */
const readText = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};
const read = async (file: string) => readText(file)?.trim();
const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);

/** What /sys/class/net/<name> says about an interface (under `sysNet`, a `class/net` directory). */
async function readInterfaceState(sysNet: string, name: string): Promise<InterfaceState & { peerIndex?: number }> {
  const dir = path.join(sysNet, name);
  const files = ['address', 'mtu', 'flags', 'iflink', 'ifindex'];
  const [address, mtu, flags, iflink, ifindex] = await Promise.all(files.map((f) => read(path.join(dir, f))));
  const out: InterfaceState & { peerIndex?: number } = {};
  if (address) out.hwaddr = address;
  if (num(mtu) !== undefined) out.mtu = num(mtu)!;
  // The administrative state and the flag-derived type, as LXD reports them (a bridge without ports is
  // up though its operstate is down); operstate and the ARP type only when flags cannot be read (then read).
  const view = flags !== undefined ? parseLinkFlags(flags) : undefined;
  if (view) {
    out.state = view.state;
    out.type = view.type;
  } else {
    const [operstate, type] = await Promise.all(['operstate', 'type'].map((f) => read(path.join(dir, f))));
    if (operstate === 'up' || operstate === 'down') out.state = operstate;
    if (type === '772') out.type = 'loopback';
    else if (type === '512' || type === '65534') out.type = 'point-to-point';
    else if (type !== undefined) out.type = 'broadcast';
  }
  // iflink differs from ifindex for a veth (the peer's ifindex, in the peer's namespace) or a macvlan (its parent)
  if (num(iflink) !== undefined && iflink !== ifindex) out.peerIndex = num(iflink)!;
  return out;
}

/** A host interface (e.g. a container's veth host side): mtu, state, hwaddr; undefined when absent. */
export async function readHostInterface(name: string, sysRoot = '/sys'): Promise<InterfaceState | undefined> {
  if (name.includes('/') || name === '.' || name === '..') return undefined;
  if ((await read(path.join(sysRoot, 'class/net', name, 'ifindex'))) === undefined) return undefined;
  const { peerIndex: _peer, ...state } = await readInterfaceState(path.join(sysRoot, 'class/net'), name);
  return state;
}

/** Host interface names by ifindex, as last read in full (per sysfs root). */
const hostNamesByIndex = new Map<string, Map<number, string>>();

/** Host interface names by ifindex: every host interface's ifindex read (one file each). */
async function hostIfindexes(sysRoot: string): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const dir = path.join(sysRoot, 'class/net');
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // no sysfs there: no names
  }
  const idx = await Promise.all(names.map((name) => read(path.join(dir, name, 'ifindex')).then(num)));
  names.forEach((name, i) => idx[i] !== undefined && out.set(idx[i]!, name));
  hostNamesByIndex.set(sysRoot, out);
  return out;
}

/**
 * The host interface with ifindex `index` (a veth's host side), undefined when there is none. The last full
 * read answers when that name still has that index (one file read, where a full read is one per host
 * interface: many on a host with many containers, for every state request); else the host is read again.
 */
async function hostNameOfIndex(sysRoot: string, index: number): Promise<string | undefined> {
  const known = hostNamesByIndex.get(sysRoot)?.get(index);
  if (known && num(await read(path.join(sysRoot, 'class/net', known, 'ifindex'))) === index) return known;
  return (await hostIfindexes(sysRoot)).get(index);
}

/** Where one network namespace is read: its proc `net` directory and the `class/net` directory of a sysfs showing it. */
export interface NamespaceDirs {
  net: string;
  sysNet: string;
}

/**
 * Interfaces of one network namespace (all, or only `only`): counters from `dev`, addresses from
 * if_inet6, fib_trie and route, and each interface's sysfs state. The one reader of the host's own
 * interfaces (host/network/network-host.ts) and of a container's (readNetworkStats below).
 */
export async function readNamespaceInterfaces(
  dirs: NamespaceDirs,
  only?: string,
): Promise<Map<string, InterfaceStats & { peerIndex?: number }>> {
  const devText = readFileSync(path.join(dirs.net, 'dev'), 'utf8');
  const [inet6, route, trie] = ['if_inet6', 'route', 'fib_trie'].map((f) => readText(path.join(dirs.net, f)) ?? '');
  const addresses = [
    ...ipv4AddressesByInterface(parseFibTrieLocal(trie!), parseIpv4Routes(route!)),
    ...parseIfInet6(inet6!),
  ];
  const wanted = [...parseNetDev(devText!)].filter(([name]) => only === undefined || name === only);
  const states = await Promise.all(wanted.map(([name]) => readInterfaceState(dirs.sysNet, name)));
  // in /proc/net/dev's order
  return new Map(
    wanted.map(([name, counters], i) => [
      name,
      { ...states[i]!, addresses: addresses.filter((a) => a.iface === name).map((a) => a.address), counters },
    ]),
  );
}

/** Interfaces of the network namespace of `pid` (a container's init): counters, addresses, state, host peer. */
export async function readNetworkStats(pid: number, roots: NetworkRoots = {}): Promise<Record<string, InterfaceStats>> {
  const procPid = path.join(roots.procRoot ?? '/proc', String(pid));
  // The container's own sysfs (mounted in its mount namespace) describes its interfaces.
  const ifaces = await readNamespaceInterfaces({
    net: path.join(procPid, 'net'),
    sysNet: path.join(procPid, 'root/sys/class/net'),
  });
  const out: Record<string, InterfaceStats> = {};
  for (const [name, { peerIndex, ...stats }] of ifaces) {
    const hostName = peerIndex !== undefined ? await hostNameOfIndex(roots.sysRoot ?? '/sys', peerIndex) : undefined;
    if (hostName) stats.hostName = hostName;
    out[name] = stats;
  }
  return out;
}

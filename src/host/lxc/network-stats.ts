/**
 * A container's interfaces, counters and addresses, read through its init's /proc/<pid>/net (which is
 * the container's network namespace) and its /sys — no process spawned, no netns entered. Addresses
 * come from if_inet6 (IPv6) and fib_trie + route (IPv4), best effort.
 */
import { readdir, readFile } from 'node:fs/promises';
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

const read = (file: string) =>
  readFile(file, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);

/** What /sys/class/net/<name> says about an interface (under `sysNet`, a `class/net` directory). */
async function readInterfaceState(sysNet: string, name: string): Promise<InterfaceState & { peerIndex?: number }> {
  const dir = path.join(sysNet, name);
  const files = ['address', 'mtu', 'operstate', 'type', 'flags', 'iflink', 'ifindex'];
  const [address, mtu, operstate, type, flags, iflink, ifindex] = await Promise.all(
    files.map((f) => read(path.join(dir, f))),
  );
  const out: InterfaceState & { peerIndex?: number } = {};
  if (address) out.hwaddr = address;
  if (num(mtu) !== undefined) out.mtu = num(mtu)!;
  // The administrative state and the flag-derived type, as LXD reports them (a bridge without ports is
  // up though its operstate is down); operstate and the ARP type only when flags cannot be read.
  const view = flags !== undefined ? parseLinkFlags(flags) : undefined;
  if (view) {
    out.state = view.state;
    out.type = view.type;
  } else {
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

/** Host interface names by ifindex. */
async function hostIfindexes(sysRoot: string): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const dir = path.join(sysRoot, 'class/net');
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const idx = num(await read(path.join(dir, name, 'ifindex')));
    if (idx !== undefined) out.set(idx, name);
  }
  return out;
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
  const [devText, inet6, route, trie] = await Promise.all([
    readFile(path.join(dirs.net, 'dev'), 'utf8'),
    ...['if_inet6', 'route', 'fib_trie'].map((f) => readFile(path.join(dirs.net, f), 'utf8').catch(() => '')),
  ]);
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
  const [ifaces, hostIdx] = await Promise.all([
    readNamespaceInterfaces({ net: path.join(procPid, 'net'), sysNet: path.join(procPid, 'root/sys/class/net') }),
    hostIfindexes(roots.sysRoot ?? '/sys'),
  ]);
  const out: Record<string, InterfaceStats> = {};
  for (const [name, { peerIndex, ...stats }] of ifaces) {
    if (peerIndex !== undefined && hostIdx.has(peerIndex)) stats.hostName = hostIdx.get(peerIndex)!;
    out[name] = stats;
  }
  return out;
}

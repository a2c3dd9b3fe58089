/**
 * A container's interfaces, counters and addresses, read through its init's /proc/<pid>/net (which is
 * the container's network namespace) and its /sys — no process spawned, no netns entered. Addresses
 * come from if_inet6 (IPv6) and fib_trie + route (IPv4), best effort.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ipv4AddressesByInterface, parseFibTrieLocal, parseIfInet6, parseIpv4Routes, parseNetDev, type NetworkAddress, type NetworkCounters } from './parse-proc-net.ts';

export interface InterfaceState {
  hwaddr?: string;
  mtu?: number;
  state?: 'up' | 'down';
  type?: 'loopback' | 'broadcast' | 'point-to-point';
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

const read = (file: string) => readFile(file, 'utf8').then((t) => t.trim(), () => undefined);
const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);

/** What /sys/class/net/<name> says about an interface (under `sysNet`, a `class/net` directory). */
async function readInterfaceState(sysNet: string, name: string): Promise<InterfaceState & { peerIndex?: number }> {
  const dir = path.join(sysNet, name);
  const files = ['address', 'mtu', 'operstate', 'type', 'flags', 'iflink', 'ifindex'];
  const [address, mtu, operstate, type, flags, iflink, ifindex] = await Promise.all(files.map((f) => read(path.join(dir, f))));
  const out: InterfaceState & { peerIndex?: number } = {};
  if (address) out.hwaddr = address;
  if (num(mtu) !== undefined) out.mtu = num(mtu)!;
  // operstate is "unknown" for lo and some virtual devices: fall back to IFF_UP in flags
  if (operstate === 'up' || operstate === 'down') out.state = operstate;
  else if (flags !== undefined) out.state = (parseInt(flags, 16) & 1) === 1 ? 'up' : 'down';
  if (type === '772') out.type = 'loopback';
  else if (type === '512' || type === '65534') out.type = 'point-to-point';
  else if (type !== undefined) out.type = 'broadcast';
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

/** Interfaces of the network namespace of `pid` (a container's init): counters, addresses, state, host peer. */
export async function readNetworkStats(pid: number, roots: NetworkRoots = {}): Promise<Record<string, InterfaceStats>> {
  const net = path.join(roots.procRoot ?? '/proc', String(pid), 'net');
  const devText = await readFile(path.join(net, 'dev'), 'utf8');
  const [inet6, route, trie] = await Promise.all(['if_inet6', 'route', 'fib_trie'].map((f) => readFile(path.join(net, f), 'utf8').catch(() => '')));
  const addresses = [...ipv4AddressesByInterface(parseFibTrieLocal(trie!), parseIpv4Routes(route!)), ...parseIfInet6(inet6!)];
  // The container's own sysfs (mounted in its mount namespace) describes its interfaces.
  const containerSysNet = path.join(roots.procRoot ?? '/proc', String(pid), 'root/sys/class/net');
  const hostIdx = await hostIfindexes(roots.sysRoot ?? '/sys');
  const out: Record<string, InterfaceStats> = {};
  for (const [name, counters] of parseNetDev(devText)) {
    const { peerIndex, ...state } = await readInterfaceState(containerSysNet, name);
    const stats: InterfaceStats = { ...state, addresses: addresses.filter((a) => a.iface === name).map((a) => a.address), counters };
    if (peerIndex !== undefined && hostIdx.has(peerIndex)) stats.hostName = hostIdx.get(peerIndex)!;
    out[name] = stats;
  }
  return out;
}

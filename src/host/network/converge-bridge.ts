/**
 * Converge one bridge from what /sys and /proc show (no command when all is right): the link (created
 * when missing; a host interface of another kind holding the name, or another interface holding the
 * subnet, is an error svcd does not "repair": it names the interface), its MAC, MTU and up flag, its sysctls, its addresses
 * (wanted ones replaced, others but link-local removed) and the routes through it (ipv4/ipv6.routes;
 * any other non-connected route on it removed).
 */
import { lstat, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatIpv6, parseIpv4Routes } from '../lxc/parse-proc-net.ts';
import { readNamespaceInterfaces } from '../lxc/network-stats.ts';
import {
  addressDeleteArgs,
  addressReplaceArgs,
  bridgeAddArgs,
  bridgeSetArgs,
  linkDeleteArgs,
  routeDeleteArgs,
  routeReplaceArgs,
} from './ip-args.ts';
import { networkSysctls } from './sysctl-writes.ts';
import type { NetworkSpec } from './types.ts';
import {
  ipv4Network,
  ipv4Text,
  ipv6Hex,
  ipv6NetworkOfHex,
  isSubnetRoute,
  parseIpv6Routes,
  popcount,
} from './used-subnets.ts';

export interface HostRoots {
  procRoot: string;
  sysRoot: string;
}

export type RunIp = (args: readonly string[]) => Promise<unknown>;

export interface LinkFacts {
  bridge: boolean;
  hwaddr: string;
  mtu: number;
  /** IFF_UP (administratively up; a bridge without ports has no carrier but is up). */
  up: boolean;
  /** The bridge it is a port of. */
  master?: string;
}

const text = (p: string) =>
  readFile(p, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );

/**
 * Deletes a link if there is one. One that goes between the look and the delete (another member of a cluster
 * sharing this kernel, or an operator, removed it first) is gone as wanted: only a link still there is an error.
 */
export async function deleteLinkIfPresent(roots: Pick<HostRoots, 'sysRoot'>, ip: RunIp, name: string): Promise<void> {
  if (!(await readLinkFacts(roots, name))) return;
  try {
    await ip(linkDeleteArgs(name));
  } catch (e) {
    if (await readLinkFacts(roots, name)) throw e;
  }
}

/** What sysfs says about one link, or undefined when there is none. */
export async function readLinkFacts(roots: Pick<HostRoots, 'sysRoot'>, name: string): Promise<LinkFacts | undefined> {
  const dir = path.join(roots.sysRoot, 'class/net', name);
  const [flags, hwaddr, mtu] = await Promise.all(['flags', 'address', 'mtu'].map((f) => text(path.join(dir, f))));
  if (flags === undefined) return undefined;
  const bridge = await lstat(path.join(dir, 'bridge')).then(
    () => true,
    () => false,
  );
  const master = await readlink(path.join(dir, 'master')).then(
    (l) => path.basename(l),
    () => undefined,
  );
  return {
    bridge,
    hwaddr: hwaddr ?? '',
    mtu: Number(mtu),
    up: (parseInt(flags, 16) & 1) === 1,
    ...(master ? { master } : {}),
  };
}

/** The CIDR of a family's own address (`10.0.0.1/24`) and of its subnet. */
const ownCidrs = (spec: NetworkSpec) =>
  [spec.ipv4, spec.ipv6].flatMap((f) =>
    f
      ? [
          {
            cidr: `${f.address.includes(':') ? formatIpv6(ipv6Hex(f.address)) : f.address}/${f.prefix}`,
            subnet: f.address.includes(':')
              ? ipv6NetworkOfHex(ipv6Hex(f.address), f.prefix)
              : ipv4Network(f.address, f.prefix),
          },
        ]
      : [],
  );

/** Canonical form of a wanted route CIDR, as /proc shows it. */
const canonical = (cidr: string) => {
  const [ip, len] = cidr.split('/') as [string, string];
  return ip.includes(':') ? ipv6NetworkOfHex(ipv6Hex(ip), Number(len)) : ipv4Network(ip, Number(len));
};

/** True when the bridge was (re)created. */
async function convergeLink(spec: NetworkSpec, roots: HostRoots, ip: RunIp): Promise<boolean> {
  const link = await readLinkFacts(roots, spec.name);
  if (link && !link.bridge)
    throw new Error(
      `host interface "${spec.name}" exists and is not a bridge (svcd does not replace an interface it did not make: remove it or rename the network)`,
    );
  await checkSubnetsFree(spec, roots);
  if (!link) await ip(bridgeAddArgs(spec.name));
  if (!link || link.hwaddr.toLowerCase() !== spec.hwaddr.toLowerCase() || link.mtu !== spec.mtu || !link.up)
    await ip(bridgeSetArgs(spec));
  return !link;
}

/** The network's subnets must not be routed through another interface already (the subnet is taken). */
async function checkSubnetsFree(spec: NetworkSpec, roots: HostRoots): Promise<void> {
  const net = path.join(roots.procRoot, 'net');
  const [v4, v6] = await Promise.all(['route', 'ipv6_route'].map((f) => text(path.join(net, f)).then((t) => t ?? '')));
  const routes = [
    ...parseIpv4Routes(v4!)
      .filter((r) => r.mask !== 0)
      .map((r) => ({ iface: r.iface, cidr: ipv4Network(ipv4Text(r.destination), popcount(r.mask)) })),
    ...parseIpv6Routes(v6!).filter((r) => isSubnetRoute(r.cidr)),
  ];
  for (const { subnet } of ownCidrs(spec)) {
    const other = routes.find((r) => r.cidr === subnet && r.iface !== spec.name);
    if (other) throw new Error(`subnet ${subnet} is already used by host interface "${other.iface}"`);
  }
}

async function convergeSysctls(spec: NetworkSpec, roots: HostRoots): Promise<void> {
  for (const w of networkSysctls(spec)) {
    const file = path.join(roots.procRoot, 'sys', w.path);
    if ((await text(file)) !== w.value) await writeFile(file, w.value);
  }
}

/** True when an address of the bridge's own was added or removed. */
async function convergeAddresses(spec: NetworkSpec, roots: HostRoots, ip: RunIp): Promise<boolean> {
  const net = path.join(roots.procRoot, 'net');
  const found = (await readNamespaceInterfaces({ net, sysNet: path.join(roots.sysRoot, 'class/net') }, spec.name)).get(
    spec.name,
  );
  const have = (found?.addresses ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.address}/${a.netmask}`);
  const want = ownCidrs(spec).map((c) => c.cidr);
  const add = want.filter((c) => !have.includes(c));
  const drop = have.filter((c) => !want.includes(c));
  for (const cidr of add) await ip(addressReplaceArgs(spec.name, cidr));
  for (const cidr of drop) await ip(addressDeleteArgs(spec.name, cidr));
  return add.length + drop.length > 0;
}

async function convergeRoutes(spec: NetworkSpec, roots: HostRoots, ip: RunIp): Promise<void> {
  const net = path.join(roots.procRoot, 'net');
  const [v4, v6] = await Promise.all(['route', 'ipv6_route'].map((f) => text(path.join(net, f)).then((t) => t ?? '')));
  const connected = new Set(ownCidrs(spec).map((c) => c.subnet));
  const have = [
    ...parseIpv4Routes(v4!)
      .filter((r) => r.iface === spec.name && r.mask !== 0)
      .map((r) => ipv4Network(ipv4Text(r.destination), popcount(r.mask))),
    ...parseIpv6Routes(v6!)
      .filter((r) => r.iface === spec.name && isSubnetRoute(r.cidr))
      .map((r) => r.cidr),
  ].filter((c) => !connected.has(c));
  const want = [...(spec.ipv4?.routes ?? []), ...(spec.ipv6?.routes ?? [])].map(canonical);
  for (const cidr of want) if (!have.includes(cidr)) await ip(routeReplaceArgs(spec.name, cidr));
  for (const cidr of have) if (!want.includes(cidr)) await ip(routeDeleteArgs(spec.name, cidr));
}

/**
 * The bridge, its sysctls, addresses and routes (ports and tunnels: converge-ports.ts). Resolves true
 * when the bridge or its addresses were remade: a dnsmasq bound to the old ones must be restarted.
 */
export async function convergeBridge(spec: NetworkSpec, roots: HostRoots, ip: RunIp): Promise<boolean> {
  const created = await convergeLink(spec, roots, ip);
  await convergeSysctls(spec, roots);
  const readdressed = await convergeAddresses(spec, roots, ip);
  await convergeRoutes(spec, roots, ip);
  return created || readdressed;
}

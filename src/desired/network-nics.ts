/**
 * Read-only queries over containers, profiles and managed networks: which container nics sit on a
 * network (profiles expanded), and the cross-object checks of a container's nics at its desired write
 * (a static address inside its managed network's subnet, not its gateway, not taken by another nic).
 * The networks table itself is written only by desired/networks.ts.
 */
import { BlockList, isIPv4 } from 'node:net';
import { asc, inArray, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { parseBool } from '../util/parse-bool.ts';
import { nicParentOf } from './devices.ts';
import { nicTypeOf } from './devices-nic.ts';
import { ValidationError } from './errors.ts';
import { expandConfig } from './expand.ts';
import { profileProjectOf } from './profile-project.ts';
import { readMemberStatus } from './member-status.ts';
import { cachedNetworks } from './cached-reads.ts';
import { containers, networks, profiles, projects, type NetworkRow } from './schema/index.ts';

type Devices = Record<string, Record<string, string>>;

/** One container nic on a managed network (expanded: its profiles' nics too). */
export interface NetworkNic {
  containerId: string;
  project: string;
  containerName: string;
  device: string;
  /** The nic's `hwaddr`, else the `volatile.<device>.hwaddr` svcd generated ('' when neither exists yet). */
  hwaddr: string;
  ipv4?: string;
  ipv6?: string;
}

/** `volatile.<device>.hwaddr`: the MAC svcd generated for a nic without `hwaddr`. */
export const volatileHwaddrKey = (device: string) => `volatile.${device}.hwaddr`;

/** The nics (device name → device) of expanded devices that join `network`. */
export function nicsJoining(devices: Devices, network: string): [string, Record<string, string>][] {
  return Object.entries(devices).filter(([, d]) => d.type === 'nic' && nicParentOf(d) === network);
}

/** Every live (not deleting) container's expanded devices and config: three reads, profiles expanded here. */
async function expandedContainers(db: DbOrTx) {
  const [cts, profs, projs] = await Promise.all([
    db
      .select({
        id: containers.id,
        project: containers.project,
        name: containers.name,
        profiles: containers.profiles,
        config: containers.config,
        devices: containers.devices,
      })
      .from(containers)
      .where(isNull(containers.deletingAt)),
    db
      .select({ project: profiles.project, name: profiles.name, config: profiles.config, devices: profiles.devices })
      .from(profiles),
    db.select({ name: projects.name, config: projects.config }).from(projects),
  ]);
  const profileProject = new Map(projs.map((p) => [p.name, profileProjectOf(p)]));
  const byKey = new Map(profs.map((p) => [`${p.project}\0${p.name}`, p]));
  return cts.map((c) => {
    const pp = profileProject.get(c.project) ?? c.project;
    const used = c.profiles.map((n) => byKey.get(`${pp}\0${n}`)).filter((p) => p !== undefined);
    return { ...c, ...expandConfig(used, c) };
  });
}

/** The container nics on a network (by its name), ordered by project, container and device. */
export async function nicsOnNetwork(db: DbOrTx, name: string): Promise<NetworkNic[]> {
  const out: NetworkNic[] = [];
  for (const c of await expandedContainers(db)) {
    for (const [device, d] of nicsJoining(c.devices, name)) {
      out.push({
        containerId: c.id,
        project: c.project,
        containerName: c.name,
        device,
        hwaddr: (d.hwaddr ?? c.config[volatileHwaddrKey(device)] ?? '').toLowerCase(),
        ...(d['ipv4.address'] ? { ipv4: d['ipv4.address'] } : {}),
        ...(d['ipv6.address'] ? { ipv6: d['ipv6.address'] } : {}),
      });
    }
  }
  const key = (n: NetworkNic) => `${n.project}\0${n.containerName}\0${n.device}`;
  return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** The ids of the containers with a nic on a network (each once). */
export async function networkDependents(db: DbOrTx, name: string): Promise<string[]> {
  return [...new Set((await nicsOnNetwork(db, name)).map((n) => n.containerId))];
}

/**
 * A managed network by name (not being deleted), or undefined. From the cached list of networks (a reconcile of
 * each container asks two or three times): in a transaction, read there. The row is shared: never change it.
 */
export async function readManagedNetwork(db: DbOrTx, name: string): Promise<NetworkRow | undefined> {
  const row = (await cachedNetworks(db)).find((n) => n.name === name);
  return row && !row.deletingAt ? row : undefined;
}

/**
 * Whether a managed network is up for its containers: its row exists and is not being deleted, and its
 * reconcile on `node` (kind `network`, key = its id) converged its generation without an error. `why` otherwise.
 */
export async function networkReadiness(
  db: DbOrTx,
  name: string,
  node: string,
): Promise<{ ready: true; network: NetworkRow } | { ready: false; why: string }> {
  const row = (await cachedNetworks(db)).find((n) => n.name === name);
  if (!row) return { ready: false, why: 'it does not exist' };
  if (row.deletingAt) return { ready: false, why: 'it is being deleted' };
  if (row.pending) return { ready: false, why: 'it is pending: defined on some members only' };
  const st = await readMemberStatus(db, node, 'network', row.id);
  if (st?.lastError) return { ready: false, why: st.lastError };
  if (!st || st.observedGeneration < row.generation) return { ready: false, why: 'it is not set up yet' };
  return { ready: true, network: row };
}

/**
 * In a desired write's transaction: lock (FOR SHARE, until it ends) the managed networks that the nics
 * among `devices` name as parent, so that a concurrent DELETE or rename of one of them (FOR UPDATE, then
 * its used_by) waits for this write and sees it, or this write waits for it. A nic on a network being
 * deleted is refused (400). Returns the locked networks by name.
 */
export async function lockNicNetworks(db: DbOrTx, devices: Devices): Promise<Map<string, NetworkRow>> {
  const names = [
    ...new Set(
      Object.values(devices)
        .filter((d) => d.type === 'nic')
        .map(nicParentOf),
    ),
  ]
    .filter((n) => n !== '')
    .sort();
  const out = new Map<string, NetworkRow>();
  if (names.length === 0) return out;
  const rows = await db
    .select()
    .from(networks)
    .where(inArray(networks.name, names))
    .orderBy(asc(networks.name))
    .for('share');
  for (const row of rows) {
    if (row.deletingAt) {
      const [device] = Object.entries(devices).find(([, d]) => d.type === 'nic' && nicParentOf(d) === row.name)!;
      throw new ValidationError(`Device "${device}" (nic): network "${row.name}" is being deleted`);
    }
    out.set(row.name, row);
  }
  return out;
}

/** `ipv4.address` / `ipv6.address` of a network as gateway + subnet, or undefined (none, unset). */
function subnetOf(cidr: string | undefined): { gateway: string; list: BlockList; family: 'ipv4' | 'ipv6' } | undefined {
  const m = /^([^/]+)\/(\d+)$/.exec(cidr ?? '');
  if (!m) return undefined;
  const family = isIPv4(m[1]!) ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  list.addSubnet(m[1]!, Number(m[2]), family);
  return { gateway: m[1]!, list, family };
}

/**
 * Cross-object checks of a container's expanded nics at a desired write (create, PUT/PATCH, a profile
 * change): `network` must name a managed network; a static address needs a managed parent, must be in
 * its subnet, not its gateway, and not another container nic's on the same network. `id`: the container
 * being written (its own nics are not a conflict), undefined for a new one.
 */
export async function checkContainerNics(db: DbOrTx, id: string | undefined, devices: Devices): Promise<void> {
  const locked = await lockNicNetworks(db, devices);
  const nics = Object.entries(devices).filter(([, d]) => d.type === 'nic');
  for (const [device, d] of nics) {
    const where = `Device "${device}" (nic)`;
    const parent = nicParentOf(d);
    if (nicTypeOf(d) === 'physical') {
      // One container at a time holds a host interface (one writer at a time per interface).
      await db.execute(sql`select pg_advisory_xact_lock(hashtext(${`svcd-nic-parent:${parent}`}))`);
      const other = (await nicsOnNetwork(db, parent)).find((n) => n.containerId !== id);
      if (other)
        throw new ValidationError(
          `${where}: invalid "parent": host interface "${parent}" is already used by container "${other.containerName}" (project "${other.project}", device "${other.device}")`,
        );
      continue;
    }
    const net = locked.get(parent);
    if (!net) {
      if (d.network !== undefined)
        throw new ValidationError(`${where}: network "${parent}" does not exist (create it with POST /1.0/networks)`);
      for (const k of ['ipv4.address', 'ipv6.address'])
        if (d[k] !== undefined)
          throw new ValidationError(`${where}: "${k}" needs a managed network as parent; "${parent}" is not one`);
      continue;
    }
    const static4 = d['ipv4.address'];
    const static6 = d['ipv6.address'];
    if (!static4 && !static6) continue;
    for (const [k, addr] of [
      ['ipv4.address', static4],
      ['ipv6.address', static6],
    ] as const) {
      if (!addr) continue;
      const subnet = subnetOf(net.config[k]);
      if (!subnet)
        throw new ValidationError(
          `${where}: "${k}" is set but network "${parent}" has no ${k === 'ipv4.address' ? 'IPv4' : 'IPv6'} subnet`,
        );
      // A static address is a DHCP reservation: as LXD, refused where the network hands out none
      // (ipv4.dhcp off; for IPv6, stateful DHCPv6 off, the default: SLAAC picks the address).
      const dhcp =
        k === 'ipv4.address'
          ? parseBool(net.config['ipv4.dhcp'], true)
          : parseBool(net.config['ipv6.dhcp'], true) && parseBool(net.config['ipv6.dhcp.stateful']);
      if (!dhcp)
        throw new ValidationError(
          `${where}: cannot specify "${k}" when ${k === 'ipv4.address' ? 'DHCP is' : 'DHCP or "ipv6.dhcp.stateful" are'} disabled on network "${parent}"`,
        );
      if (!subnet.list.check(addr, subnet.family))
        throw new ValidationError(`${where}: "${k}" ${addr} is outside network "${parent}"'s subnet ${net.config[k]}`);
      if (subnet.gateway.toLowerCase() === addr.toLowerCase())
        throw new ValidationError(`${where}: "${k}" ${addr} is network "${parent}"'s own address (its gateway)`);
    }
    // One writer at a time per network for the duplicate check (held until the transaction ends).
    await db.execute(sql`select pg_advisory_xact_lock(hashtext(${`svcd-network:${parent}`}))`);
    for (const other of await nicsOnNetwork(db, parent)) {
      if (other.containerId === id) continue;
      const clash =
        (static4 && other.ipv4 === static4) || (static6 && other.ipv6?.toLowerCase() === static6.toLowerCase());
      if (clash)
        throw new ValidationError(
          `${where}: address ${other.ipv4 === static4 ? static4 : static6} on network "${parent}" is already used by container "${other.containerName}" (project "${other.project}", device "${other.device}")`,
        );
    }
  }
}

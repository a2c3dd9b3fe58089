import { randomUUID } from 'node:crypto';
import { and, asc, eq, isNull, type SQL, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { networkDirOf } from '../host/layout.ts';
import type { HostInterface, NetworkLease } from '../host/network/types.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { resolveNetworkAddresses } from './network-addresses.ts';
import { nicsOnNetwork } from './network-nics.ts';
import { checkNetworkConfig, type NetworkProbes } from './network-config.ts';
import { networks, type NetworkRow } from './schema/index.ts';
import { withMemberMoved, withMemberValues } from './member-config-sql.ts';
import { describeUsers, usedByReader } from './used-by.ts';

export const NETWORK_KIND = 'network';

/** What creating or changing a network asks of the host (the NetworkHost subset). */
export interface NetworkHostView extends NetworkProbes {
  interfaces(): Promise<HostInterface[]>;
  usedSubnets(): Promise<string[]>;
}

export interface NetworkInput {
  name: string;
  type?: string | undefined;
  description?: string | undefined;
  config?: Record<string, string> | undefined;
}

/** A network's name is its bridge's interface name: 1..15 of [A-Za-z0-9_-], not `.` or `..`. */
export function validateNetworkName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new ValidationError('Network name is required');
  if (name.length > 15)
    throw new ValidationError(
      `Network name "${name}" is too long: it is the bridge's interface name (at most 15 characters)`,
    );
  if (!/^[A-Za-z0-9_-]+$/.test(name))
    throw new ValidationError(
      `Network name ${JSON.stringify(name)} may only contain letters, digits, "_" and "-" (it is an interface name)`,
    );
  return name;
}

/** Refuse a name a host interface that svcd does not manage already has. */
async function checkNameFree(db: DbOrTx, name: string, host: Pick<NetworkHostView, 'interfaces'>): Promise<void> {
  if (!(await host.interfaces()).some((i) => i.name === name)) return;
  const [managed] = await db.select({ id: networks.id }).from(networks).where(eq(networks.name, name));
  if (!managed) throw new ConflictError(`The name "${name}" is already used by a host interface`);
}

/**
 * Validate `config` (probing the host for what it needs) and resolve `auto` addresses, checking that
 * no subnet overlaps another network or the host's; `self` is the network being changed.
 */
async function settleConfig(
  db: DbOrTx,
  name: string,
  config: Record<string, string>,
  host: NetworkHostView,
  selfId?: string,
): Promise<Record<string, string>> {
  await checkNetworkConfig(name, config, host);
  const all = await db.select({ id: networks.id, name: networks.name, config: networks.config }).from(networks);
  return resolveNetworkAddresses(
    config,
    all.filter((n) => n.id !== selfId),
    all,
    await host.usedSubnets(),
  );
}

/**
 * A new network's name, type and config, validated; the config as it will be stored, defaults filled
 * as LXD's create does (both addresses `auto` unless given, NAT on for an `auto` family) and `auto`
 * resolved to a free subnet.
 */
export async function prepareNetwork(
  db: DbOrTx,
  input: NetworkInput,
  host: NetworkHostView,
  /** The pending row being created (desired/network-pending.ts): its name is its own. */
  pendingId?: string,
): Promise<{ name: string; type: string; description: string; config: Record<string, string> }> {
  const name = validateNetworkName(input.name);
  const type = input.type || 'bridge';
  if (type !== 'bridge') throw new ValidationError(`Network type "${type}" is not supported (supported: bridge)`);
  if (!pendingId) await checkNameFree(db, name, host);
  const config = Object.fromEntries(Object.entries(input.config ?? {}).filter(([, v]) => v !== ''));
  for (const f of ['ipv4', 'ipv6']) {
    config[`${f}.address`] ??= 'auto';
    if (config[`${f}.address`] === 'auto') config[`${f}.nat`] ??= 'true';
  }
  return {
    name,
    type,
    description: input.description ?? '',
    config: await settleConfig(db, name, config, host, pendingId),
  };
}

/** The config an update will store: validated, `auto` resolved; `cur` is the network as read. */
export async function prepareNetworkUpdate(
  db: DbOrTx,
  cur: NetworkRow,
  config: Record<string, string>,
  host: NetworkHostView,
): Promise<Record<string, string>> {
  return settleConfig(db, cur.name, config, host, cur.id);
}

/** Insert a prepared network (409 when the name is taken: the unique index decides). */
export async function insertNetwork(
  db: DbOrTx,
  net: { name: string; type: string; description: string; config: Record<string, string> },
): Promise<NetworkRow> {
  try {
    const [row] = await db
      .insert(networks)
      .values({ id: randomUUID(), ...net })
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Network "${net.name}" already exists`);
    throw e;
  }
}

export async function listNetworks(db: DbOrTx): Promise<NetworkRow[]> {
  return db.select().from(networks).orderBy(asc(networks.name));
}

/** A network by name, one being deleted included (NotFoundError when there is none). */
export async function readNetwork(db: DbOrTx, name: string): Promise<NetworkRow> {
  const [row] = await db.select().from(networks).where(eq(networks.name, name));
  if (!row) throw new NotFoundError(`Network "${name}" not found`);
  return row;
}

export async function readNetworkById(db: DbOrTx, id: string): Promise<NetworkRow | undefined> {
  const [row] = await db.select().from(networks).where(eq(networks.id, id));
  return row;
}

/**
 * Replace description and config (already prepared), conditional on `generation` (the one the caller
 * read and validated against): StaleWriteError when another write came first. Bumps the generation.
 */
export async function updateNetwork(
  db: DbOrTx,
  id: string,
  input: { description: string; config: Record<string, string> },
  generation: number,
): Promise<NetworkRow> {
  const [row] = await db
    .update(networks)
    .set({ description: input.description, config: input.config, generation: sql`${networks.generation} + 1` })
    .where(and(eq(networks.id, id), eq(networks.generation, generation), isNull(networks.deletingAt)))
    .returning();
  if (row) return row;
  const cur = await readNetworkById(db, id);
  if (!cur || cur.deletingAt) throw new NotFoundError('Network not found');
  throw new StaleWriteError(`Network "${cur.name}"`);
}

/** Rename (409 when the name is taken by a network or a host interface; 400 while in use, as LXD refuses it). */
export async function renameNetwork(
  db: Db,
  id: string,
  newName: string,
  host: Pick<NetworkHostView, 'interfaces'>,
): Promise<NetworkRow> {
  validateNetworkName(newName);
  await checkNameFree(db, newName, host);
  try {
    return await db.transaction(async (tx) => {
      const [cur] = await tx
        .select()
        .from(networks)
        .where(and(eq(networks.id, id), isNull(networks.deletingAt)))
        .for('update');
      if (!cur) throw new NotFoundError('Network not found');
      const used = await usedByReader(tx).network(cur.name);
      if (used.length)
        throw new ValidationError(`Cannot rename network "${cur.name}" while it is in use by ${describeUsers(used)}`);
      const [row] = await tx
        .update(networks)
        .set({ name: newName, generation: sql`${networks.generation} + 1` })
        .where(eq(networks.id, id))
        .returning();
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Network "${newName}" already exists`);
    throw e;
  }
}

/** Mark the network for removal (the reconciler tears it down, then deleteNetworkRow); refused while in use. */
export async function markNetworkDeleting(db: Db, id: string): Promise<NetworkRow> {
  return db.transaction(async (tx) => {
    const [cur] = await tx.select().from(networks).where(eq(networks.id, id)).for('update');
    if (!cur) throw new NotFoundError('Network not found');
    const used = await usedByReader(tx).network(cur.name);
    if (used.length) throw new ValidationError(`The network is currently in use by ${describeUsers(used)}`);
    const [row] = await tx
      .update(networks)
      .set({ deletingAt: sql`coalesce(${networks.deletingAt}, now())`, generation: sql`${networks.generation} + 1` })
      .where(eq(networks.id, id))
      .returning();
    return row!;
  });
}

/** Delete a network's row after its teardown (the reconciler). */
/**
 * A network's row locked until the transaction ends: FOR SHARE by a member about to make it on its host (a
 * deletion waits for it), FOR UPDATE before its removal (desired/member-status.ts).
 */
export async function lockNetworkRow(
  tx: DbOrTx,
  id: string,
  mode: 'share' | 'update',
): Promise<NetworkRow | undefined> {
  const [row] = await tx.select().from(networks).where(eq(networks.id, id)).for(mode);
  return row;
}

export async function deleteNetworkRow(db: DbOrTx, id: string, onlyIf?: SQL): Promise<void> {
  await db.delete(networks).where(and(eq(networks.id, id), onlyIf));
}

/** Where the host keeps a network's dnsmasq files (its leases among them). */
export function networkDir(stateDir: string, name: string): string {
  return networkDirOf(stateDir, name);
}

/**
 * The static leases of a network: container nics on it with `ipv4.address` / `ipv6.address` (hostname
 * the container's name, hwaddr the nic's or its volatile one).
 */
export async function staticLeases(db: DbOrTx, name: string): Promise<NetworkLease[]> {
  const out: NetworkLease[] = [];
  for (const n of await nicsOnNetwork(db, name))
    for (const address of [n.ipv4, n.ipv6])
      if (address) out.push({ hostname: n.containerName, hwaddr: n.hwaddr, address, type: 'static', location: 'none' });
  return out;
}

/** Static leases, then the dynamic ones (`dynamic`, from dnsmasq) of hwaddrs without a static lease. */
export function mergeLeases(statics: NetworkLease[], dynamic: NetworkLease[]): NetworkLease[] {
  const fixed = new Set(statics.map((l) => l.hwaddr.toLowerCase()).filter((h) => h !== ''));
  return [...statics, ...dynamic.filter((l) => !fixed.has(l.hwaddr.toLowerCase()))];
}

/** A member's own values of member-specific keys (desired/member-config.ts): replaced as a whole. */
export async function setNetworkMemberConfig(
  tx: DbOrTx,
  name: string,
  member: string,
  values: Record<string, string>,
): Promise<void> {
  await tx
    .update(networks)
    .set({
      memberConfig: withMemberValues(networks.memberConfig, member, values),
      generation: sql`${networks.generation} + 1`,
    })
    .where(eq(networks.name, name));
}

/** A member renamed (`to`) or removed (`to` ''): its values follow it or go. */
export async function moveNetworkMemberConfig(tx: DbOrTx, from: string, to: string): Promise<void> {
  const moved = withMemberMoved(networks.memberConfig, from, to);
  await tx.update(networks).set({ memberConfig: moved }).where(sql`${networks.memberConfig} ? ${from}::text`);
}

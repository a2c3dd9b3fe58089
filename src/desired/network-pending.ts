/**
 * LXD's two steps for a network in a cluster, as for pools (desired/pool-pending.ts): `POST
 * /1.0/networks?target=<member>` defines it on one member with only that member's own keys
 * (bridge.external_interfaces), and it is Pending; `POST /1.0/networks` without target, once it is defined on
 * every member, gives its cluster-wide config and creates it everywhere. A pending row is on no host
 * (networks.pending): its reconciler, the observer and the firewall leave it out.
 */
import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { ConflictError, retryOnceIfRaced, ValidationError } from './errors.ts';
import { withMemberValues } from './member-config-sql.ts';
import { parseMemberConfig } from './member-config.ts';
import { type NetworkHostView, type NetworkInput, prepareNetwork, validateNetworkName } from './networks.ts';
import { networks, type NetworkRow } from './schema/index.ts';

/** LXD's member-specific network keys (db.NodeSpecificNetworkConfig). */
const MEMBER_KEYS = ['bgp.ipv4.nexthop', 'bgp.ipv6.nexthop', 'bridge.external_interfaces', 'parent'];

const typeOf = (input: NetworkInput) => input.type || 'bridge';
const checkType = (input: NetworkInput, cur: NetworkRow) => {
  if (typeOf(input) !== cur.type)
    throw new ValidationError(
      `Requested network type "${typeOf(input)}" doesn't match type in existing database record "${cur.type}"`,
    );
};

/** Define the network on `member` (step one): a new pending row, or the member added to one. */
export async function defineNetworkOnMember(db: Db, input: NetworkInput, member: string): Promise<void> {
  const name = validateNetworkName(input.name);
  if (typeOf(input) !== 'bridge')
    throw new ValidationError(`Network type "${typeOf(input)}" is not supported (supported: bridge)`);
  const config = input.config ?? {};
  for (const key of Object.keys(config))
    if (!MEMBER_KEYS.includes(key))
      throw new ValidationError(`Config key "${key}" may not be used as member-specific key`);
  parseMemberConfig(Object.entries(config).map(([key, value]) => ({ entity: 'network', name, key, value })));
  // Another member's first definition committed meanwhile: this one joins it.
  return retryOnceIfRaced(() =>
    db.transaction(async (tx) => {
      const [cur] = await tx.select().from(networks).where(eq(networks.name, name)).for('update');
      if (!cur) {
        await tx.insert(networks).values({
          id: randomUUID(),
          name,
          type: typeOf(input),
          description: input.description ?? '',
          config: {},
          memberConfig: { [member]: config },
          pending: true,
        });
        return;
      }
      if (!cur.pending || cur.deletingAt) throw new ValidationError('The network is already created');
      checkType(input, cur);
      if (cur.memberConfig[member]) throw new ValidationError(`The network is already defined on member "${member}"`);
      await tx
        .update(networks)
        .set({ memberConfig: withMemberValues(networks.memberConfig, member, config) })
        .where(eq(networks.id, cur.id));
    }),
  );
}

/**
 * Step two on a pending network, once it is defined on every one of `members`: its cluster-wide config,
 * validated and resolved as any create's. Undefined when there is no pending network of that name.
 */
export async function finishPendingNetwork(
  db: Db,
  input: NetworkInput,
  members: readonly string[],
  host: NetworkHostView,
): Promise<NetworkRow | undefined> {
  const [cur] = await db.select().from(networks).where(eq(networks.name, input.name));
  if (!cur?.pending) return undefined;
  for (const key of Object.keys(input.config ?? {}))
    if (MEMBER_KEYS.includes(key)) throw new ValidationError(`Config key "${key}" is cluster member specific`);
  checkType(input, cur);
  const missing = members.filter((m) => !cur.memberConfig[m]);
  if (missing.length) throw new ValidationError(`Network not defined on nodes: ${missing.join(', ')}`);
  const net = await prepareNetwork(db, input, host, cur.id);
  const [row] = await db
    .update(networks)
    .set({
      pending: false,
      config: net.config,
      description: input.description ?? cur.description,
      generation: sql`${networks.generation} + 1`,
    })
    .where(and(eq(networks.id, cur.id), eq(networks.pending, true), eq(networks.generation, cur.generation)))
    .returning();
  if (!row) throw new ConflictError(`Network "${input.name}" changed meanwhile; try again`);
  return row;
}

/** A pending network's removal: its row (nothing of it is on any host). False when it is not pending. */
export async function deletePendingNetwork(db: Db, name: string): Promise<boolean> {
  const gone = await db
    .delete(networks)
    .where(and(eq(networks.name, name), eq(networks.pending, true)))
    .returning({ id: networks.id });
  return gone.length > 0;
}

/**
 * Member-specific keys of pools and networks in a cluster (LXD's `member_config`): each member may give its
 * own `source` and `size` for a storage pool and its own `bridge.external_interfaces` for a bridge when it
 * joins. GET /1.0/cluster lists the keys the cluster's pools and networks have; a join's values are kept per
 * member (storage_pools.member_config, networks.member_config) and used by that member's host only
 * (host/layout.ts poolSpecOf, reconcilers/network/network-spec.ts).
 */
import path from 'node:path';
import type { DbOrTx } from '../db/types.ts';
import { isSize } from './config-keys.ts';
import { ValidationError } from './errors.ts';
import { bridgeKeyTable } from './network-config.ts';
import { listNetworks, setNetworkMemberConfig } from './networks.ts';
import { listPools, setPoolMemberConfig } from './storage-pools.ts';

type Entity = 'storage-pool' | 'network';

/** Keys applied per member, with their check. */
const APPLIED: Record<Entity, Record<string, (v: string) => string | undefined>> = {
  'storage-pool': {
    source: (v) =>
      v === '' || (path.isAbsolute(v) && path.resolve(v) !== '/' && !v.split('/').includes('..'))
        ? undefined
        : 'must be an absolute path other than /',
    size: (v) => (v === '' ? undefined : isSize(v)),
  },
  network: {
    'bridge.external_interfaces': (v) =>
      v === '' ? undefined : bridgeKeyTable({}).exact['bridge.external_interfaces']!(v),
  },
};
/**
 * LXD's other member-specific keys (db.NodeSpecificStorageConfig, NodeSpecificNetworkConfig): for drivers and
 * features this host does not have, or filled in by the server itself. LXD's own join skips some of them
 * too; they are accepted and not used, so a join prepared for LXD goes through.
 */
const NOT_USED: Record<Entity, readonly string[]> = {
  'storage-pool': ['volatile.initial_source', 'zfs.pool_name', 'lvm.thinpool_name', 'lvm.vg_name'],
  network: ['bgp.ipv4.nexthop', 'bgp.ipv6.nexthop', 'parent'],
};

export interface MemberConfigEntry {
  entity: Entity;
  name: string;
  key: string;
  value: string;
}

/** A join's member_config, checked for its form: a 400 naming the entry otherwise. */
export function parseMemberConfig(list: readonly unknown[] | undefined): MemberConfigEntry[] {
  return (list ?? []).map((raw, i) => {
    const e = raw as Partial<Record<'entity' | 'name' | 'key' | 'value', unknown>>;
    const at = `Invalid "member_config" entry ${i}`;
    if (!e || typeof e !== 'object') throw new ValidationError(`${at}: expected an object`);
    if (e.entity !== 'storage-pool' && e.entity !== 'network')
      throw new ValidationError(`${at}: "entity" must be "storage-pool" or "network"`);
    for (const f of ['name', 'key'] as const)
      if (typeof e[f] !== 'string' || !e[f]) throw new ValidationError(`${at}: "${f}" is required`);
    if (e.value !== undefined && typeof e.value !== 'string')
      throw new ValidationError(`${at}: "value" must be a string`);
    const entry: MemberConfigEntry = {
      entity: e.entity as Entity,
      name: e.name as string,
      key: e.key as string,
      value: (e.value as string | undefined) ?? '',
    };
    const check = APPLIED[entry.entity][entry.key];
    if (!check && !NOT_USED[entry.entity].includes(entry.key))
      throw new ValidationError(
        `${at}: "${entry.key}" is not a member-specific key of a ${entry.entity} (${Object.keys(APPLIED[entry.entity]).join(', ')})`,
      );
    const bad = check?.(entry.value);
    if (bad) throw new ValidationError(`${at}: "${entry.key}" of ${entry.entity} "${entry.name}" ${bad}`);
    return entry;
  });
}

/** The joiner's own check of its sources: never inside or around its state directory. */
export function checkMemberSources(entries: readonly MemberConfigEntry[], stateDir: string): void {
  const state = path.resolve(stateDir);
  for (const e of entries) {
    if (e.entity !== 'storage-pool' || e.key !== 'source' || !e.value) continue;
    const s = path.resolve(e.value);
    if (s === state || s.startsWith(`${state}/`) || state.startsWith(`${s}/`))
      throw new ValidationError(
        `Invalid "member_config" source "${e.value}" of storage pool "${e.name}": it overlaps svcd's state directory`,
      );
  }
}

/**
 * Keep a joining member's values (in the transaction that admits it): every entry must name a pool or a
 * network of the cluster. A value "" means the member's default (a source svcd chooses, no size limit, no
 * external interface).
 */
export async function writeMemberConfig(
  tx: DbOrTx,
  member: string,
  entries: readonly MemberConfigEntry[],
): Promise<void> {
  if (!entries.length) return;
  const pools = new Set((await listPools(tx)).map((p) => p.name));
  const nets = new Set((await listNetworks(tx)).map((n) => n.name));
  const by = new Map<string, Record<string, string>>();
  for (const e of entries) {
    const known = e.entity === 'storage-pool' ? pools : nets;
    if (!known.has(e.name))
      throw new ValidationError(`Invalid "member_config": the cluster has no ${e.entity} "${e.name}"`);
    if (!APPLIED[e.entity][e.key] || e.value === '') continue;
    const id = `${e.entity}\0${e.name}`;
    by.set(id, { ...by.get(id), [e.key]: e.value });
  }
  for (const [id, values] of by) {
    const [entity, name] = id.split('\0') as [Entity, string];
    if (entity === 'storage-pool') await setPoolMemberConfig(tx, name, member, values);
    else await setNetworkMemberConfig(tx, name, member, values);
  }
}

/** GET /1.0/cluster's member_config: the member-specific keys the cluster's pools and networks have. */
export async function listMemberConfigKeys(
  db: DbOrTx,
): Promise<{ entity: Entity; name: string; key: string; description: string }[]> {
  const out: { entity: Entity; name: string; key: string; description: string }[] = [];
  for (const p of await listPools(db))
    for (const key of Object.keys(APPLIED['storage-pool']))
      if (p.config[key] !== undefined)
        out.push({
          entity: 'storage-pool',
          name: p.name,
          key,
          description: `"${key}" property for storage pool "${p.name}"`,
        });
  for (const n of await listNetworks(db))
    for (const key of Object.keys(APPLIED.network))
      if (n.config[key] !== undefined)
        out.push({ entity: 'network', name: n.name, key, description: `"${key}" property for network "${n.name}"` });
  return out;
}

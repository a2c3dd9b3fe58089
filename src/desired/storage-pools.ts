import path from 'node:path';
import { and, asc, eq, isNull, type SQL, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { DRIVERS, type ProbeResult } from '../host/storage/driver-catalog.ts';
import { isAny, isBool, isSize, type KeyTable, type ValueCheck, validateConfig } from './config-keys.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { validateName } from './names.ts';
import { deleteMemberStatuses } from './member-status.ts';
import { profiles, storagePools, type StoragePoolRow } from './schema/index.ts';
import { withMemberMoved, withMemberValues } from './member-config-sql.ts';
import { describeUsers, usedByReader } from './used-by.ts';
import { parseSize } from '../util/size.ts';
import { defaultPoolPath, loopFilePath } from '../host/layout.ts';

export const POOL_KIND = 'storage-pool';
/** Smallest loop-backed btrfs pool mkfs.btrfs accepts, with room to spare. */
const MIN_BTRFS_BYTES = 128 * 1024 * 1024;
/** Keys that cannot change after creation. */
const IMMUTABLE = ['source', 'volatile.initial_source', 'zfs.pool_name', 'lvm.vg_name', 'lvm.thinpool_name'];

const sizeCheck: ValueCheck = (v) => {
  const err = isSize(v);
  if (err) return err;
  try {
    return parseSize(v) > 0 ? undefined : 'must be greater than zero';
  } catch (e) {
    // Well-formed but beyond what can be counted in bytes (e.g. 1EiB): a 400, not an internal error.
    return (e as Error).message;
  }
};
const KEY_CHECKS: Record<string, ValueCheck> = {
  size: sizeCheck,
  'volume.size': sizeCheck,
  'rsync.bwlimit': (v) =>
    /^\d+(\.\d+)?\s*(B|kB|KB|MB|GB|KiB|MiB|GiB)?$/.test(v) ? undefined : 'must be a rate such as 10MB (per second)',
  'ceph.osd.force_reuse': isBool,
  'volume.block.filesystem': (v) => (['ext4', 'xfs', 'btrfs'].includes(v) ? undefined : 'must be ext4, xfs or btrfs'),
};

/** The key table of one driver, from the registry (capabilities as data). */
export function poolKeyTable(driver: string): KeyTable {
  const info = DRIVERS[driver];
  const exact: Record<string, ValueCheck> = {};
  for (const k of info?.poolKeys ?? []) exact[k] = KEY_CHECKS[k] ?? isAny;
  return { exact, prefixes: { 'user.': isAny }, readOnlyPrefixes: ['volatile.'] };
}

export interface PoolInput {
  name: string;
  driver: string;
  description?: string | undefined;
  config?: Record<string, string> | undefined;
}

/** Where a pool lives on the host: its source and, for mounted drivers, its mount point. */
export function poolPaths(
  stateDir: string,
  row: { name: string; driver: string; config: Record<string, string> },
): string[] {
  const paths = [defaultPoolPath(stateDir, row.name)];
  if (row.config.source) paths.push(path.resolve(row.config.source));
  return paths;
}

const inside = (child: string, parent: string) =>
  child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/** Refuse a source that is `/`, inside or around svcd's state directory, or overlaps another pool. */
function checkSource(source: string, stateDir: string, others: StoragePoolRow[]): void {
  if (!path.isAbsolute(source)) throw new ValidationError(`Invalid source "${source}": must be an absolute path`);
  const s = path.resolve(source);
  if (s === '/') throw new ValidationError('Invalid source "/": a pool cannot take over the root filesystem');
  if (s.split('/').some((p) => p === '..')) throw new ValidationError(`Invalid source "${source}"`);
  if (inside(s, path.resolve(stateDir)))
    throw new ValidationError(`Invalid source "${source}": it is inside svcd's state directory`);
  if (inside(path.resolve(stateDir), s))
    throw new ValidationError(`Invalid source "${source}": it contains svcd's state directory`);
  for (const o of others)
    for (const p of poolPaths(stateDir, o))
      if (inside(s, p) || inside(p, s))
        throw new ValidationError(`Invalid source "${source}": it overlaps storage pool "${o.name}" (${p})`);
}

/** A driver svcd knows, supports and finds on this host: else a 400 saying which it is not. */
export async function checkDriverUsable(driver: string, probeDriver: (driver: string) => Promise<ProbeResult>) {
  const info = DRIVERS[driver];
  if (!info)
    throw new ValidationError(`Unknown storage driver "${driver}" (known: ${Object.keys(DRIVERS).join(', ')})`);
  const probe = await probeDriver(driver);
  if (!probe.ok)
    throw new ValidationError(
      `The ${driver} storage driver is not available on this host: missing ${probe.missing.join(', ')}`,
    );
  if (info.available !== 'yes')
    throw new ValidationError(`The ${driver} storage driver is not supported by svcd yet (supported: dir, btrfs)`);
}

/**
 * Validate a new pool against the driver catalog and what this host can run (`probe`, passed in: validation
 * does not look at the host itself); returns the config to store.
 */
export async function preparePool(
  db: DbOrTx,
  stateDir: string,
  input: PoolInput,
  probeDriver: (driver: string) => Promise<ProbeResult>,
): Promise<Record<string, string>> {
  validateName('Storage pool', input.name);
  await checkDriverUsable(input.driver, probeDriver);
  const config = { ...(input.config ?? {}) };
  for (const k of Object.keys(config))
    if (k.startsWith('volatile.')) throw new ValidationError(`Storage pool config key "${k}" is read-only`);
  validateConfig('storage pool', config, poolKeyTable(input.driver));
  if (input.driver === 'dir' && config.size)
    throw new ValidationError(
      'The dir driver has no pool size: a dir pool uses the space of the filesystem it lives on',
    );
  if (config.source) {
    const others = await db.select().from(storagePools);
    checkSource(config.source, stateDir, others);
    config['volatile.initial_source'] = config.source;
  }
  if (input.driver === 'btrfs' && !config.source) {
    const bytes = parseSize(config.size ?? '5GiB');
    if (bytes < MIN_BTRFS_BYTES)
      throw new ValidationError(`Invalid size "${config.size}": a btrfs pool needs at least 128MiB`);
    config.size ??= '5GiB';
    config.source = loopFilePath(stateDir, input.name);
  }
  if (input.driver === 'dir' && !config.source) config.source = defaultPoolPath(stateDir, input.name);
  return config;
}

export async function insertPool(db: Db, input: PoolInput, config: Record<string, string>): Promise<StoragePoolRow> {
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(storagePools)
        .values({ name: input.name, driver: input.driver, description: input.description ?? '', config })
        .returning();
      // A pool of the same name may have existed before: no member's status of it may count for this one.
      await deleteMemberStatuses(tx, POOL_KIND, input.name);
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Storage pool "${input.name}" already exists`);
    throw e;
  }
}

export async function listPools(db: DbOrTx): Promise<StoragePoolRow[]> {
  return db.select().from(storagePools).orderBy(asc(storagePools.name));
}

export async function readPool(db: DbOrTx, name: string): Promise<StoragePoolRow> {
  const [row] = await db.select().from(storagePools).where(eq(storagePools.name, name));
  if (!row) throw new NotFoundError(`Storage pool "${name}" not found`);
  return row;
}

/** Profiles and containers whose disks are on the pool, its images and custom volumes (see used-by.ts). */
export async function poolUsedBy(db: DbOrTx, name: string): Promise<string[]> {
  return usedByReader(db).pool(name);
}

/**
 * Replace the pool's config (PUT; PATCH passes the merged map). Immutable keys must not change.
 * With `generation` (the one the caller read and merged from) only if nothing was written since,
 * else StaleWriteError; the update is conditional on the generation it validated against either way.
 */
export async function updatePool(
  db: Db,
  name: string,
  input: { description: string; config: Record<string, string> },
  generation?: number,
): Promise<StoragePoolRow> {
  const cur = await readPool(db, name);
  if (cur.deletingAt) throw new ConflictError(`Storage pool "${name}" is being deleted`);
  if (generation !== undefined && cur.generation !== generation) throw new StaleWriteError(`Storage pool "${name}"`);
  const config = { ...input.config };
  for (const k of IMMUTABLE) {
    if (k in cur.config && config[k] === undefined) config[k] = cur.config[k]!;
    if (config[k] !== cur.config[k]) throw new ValidationError(`Storage pool config key "${k}" cannot be changed`);
  }
  const userConfig = Object.fromEntries(Object.entries(config).filter(([k]) => !IMMUTABLE.includes(k)));
  validateConfig('storage pool', userConfig, poolKeyTable(cur.driver));
  if (config.size !== cur.config.size) {
    if (cur.driver !== 'btrfs' || cur.config['volatile.initial_source'])
      throw new ValidationError('Only the size of a loop-backed btrfs pool can be changed');
    if (!config.size || parseSize(config.size) < parseSize(cur.config.size ?? '0'))
      throw new ValidationError('A storage pool can grow but not shrink');
  }
  const [row] = await db
    .update(storagePools)
    .set({ description: input.description, config, generation: sql`${storagePools.generation} + 1` })
    .where(
      and(eq(storagePools.name, name), eq(storagePools.generation, cur.generation), isNull(storagePools.deletingAt)),
    )
    .returning();
  if (!row) throw new StaleWriteError(`Storage pool "${name}"`);
  return row;
}

/**
 * Put back the description and config a failed update replaced, unless the pool changed since
 * (`generation` is the failed update's): a change the host refused must not stay desired.
 */
export async function revertPool(
  db: DbOrTx,
  name: string,
  generation: number,
  prev: { description: string; config: Record<string, string> },
): Promise<StoragePoolRow | undefined> {
  const [row] = await db
    .update(storagePools)
    .set({ description: prev.description, config: prev.config, generation: sql`${storagePools.generation} + 1` })
    .where(and(eq(storagePools.name, name), eq(storagePools.generation, generation), isNull(storagePools.deletingAt)))
    .returning();
  return row;
}

/** Mark the pool for removal (the reconciler tears it down and deletes the row); refused while in use. */
export async function markPoolDeleting(db: Db, name: string): Promise<StoragePoolRow> {
  return db.transaction(async (tx) => {
    // The row is held until commit: a volume inserted meanwhile (its foreign key) waits, then is seen.
    const [cur] = await tx
      .select({ name: storagePools.name })
      .from(storagePools)
      .where(eq(storagePools.name, name))
      .for('update');
    if (!cur) throw new NotFoundError(`Storage pool "${name}" not found`);
    const used = await poolUsedBy(tx, name);
    if (used.length) throw new ValidationError(`The storage pool is currently in use by ${describeUsers(used)}`);
    const [row] = await tx
      .update(storagePools)
      .set({
        deletingAt: sql`coalesce(${storagePools.deletingAt}, now())`,
        generation: sql`${storagePools.generation} + 1`,
      })
      .where(eq(storagePools.name, name))
      .returning();
    return row!;
  });
}

/** Delete a pool row after teardown, and a failed creation's row. */
/** A pool's row locked until the transaction ends (FOR SHARE or UPDATE: desired/member-status.ts says why). */
export const lockPoolRow = async (tx: DbOrTx, name: string, mode: 'share' | 'update') =>
  (await tx.select().from(storagePools).where(eq(storagePools.name, name)).for(mode))[0];

export async function deletePoolRow(db: DbOrTx, name: string, onlyIf?: SQL): Promise<void> {
  await db.delete(storagePools).where(and(eq(storagePools.name, name), onlyIf));
}

/**
 * First start: a `default` dir pool in the state directory, and the default profile's root disk on
 * it. Only at first start, so that a user who removes them is not overruled later.
 */
export async function ensureDefaultPool(db: Db, stateDir: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .insert(storagePools)
      .values({
        name: 'default',
        driver: 'dir',
        description: 'Default svcd storage pool',
        config: { source: defaultPoolPath(stateDir, 'default') },
      })
      .onConflictDoNothing();
    await tx
      .update(profiles)
      .set({
        devices: sql`${profiles.devices} || ${JSON.stringify({ root: { type: 'disk', path: '/', pool: 'default' } })}::jsonb`,
        generation: sql`${profiles.generation} + 1`,
      })
      .where(and(eq(profiles.project, 'default'), eq(profiles.name, 'default')));
  });
}

/** A member's own values of member-specific keys (desired/member-config.ts): replaced as a whole. */
export async function setPoolMemberConfig(
  tx: DbOrTx,
  pool: string,
  member: string,
  values: Record<string, string>,
): Promise<void> {
  await tx
    .update(storagePools)
    .set({
      memberConfig: withMemberValues(storagePools.memberConfig, member, values),
      generation: sql`${storagePools.generation} + 1`,
    })
    .where(eq(storagePools.name, pool));
}

/** A member renamed (`to`) or removed (`to` ''): its values follow it or go. */
export async function movePoolMemberConfig(tx: DbOrTx, from: string, to: string): Promise<void> {
  const moved = withMemberMoved(storagePools.memberConfig, from, to);
  await tx.update(storagePools).set({ memberConfig: moved }).where(sql`${storagePools.memberConfig} ? ${from}::text`);
}

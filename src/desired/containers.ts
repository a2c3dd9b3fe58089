import { randomUUID } from 'node:crypto';
import { type ContainerInput, expandContainer } from './container-expand.ts';
import { checkNicFeatures, type NicFeatureProbe, prepareNics } from './container-nic-prep.ts';
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { leaveInFlight } from '../db/leave-in-flight.ts';
import type { DbOrTx } from '../db/types.ts';
import { validateConfig } from './config-keys.ts';
import { validateDevices, validateExpandedDevices } from './devices.ts';
import { checkNicHost, type NicHostProbe } from './devices-nic.ts';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  StaleWriteError,
  ValidationError,
  isUniqueViolation,
} from './errors.ts';
import type { expandConfig } from './expand.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { validateContainerName } from './names.ts';
import { cachedPools } from './cached-reads.ts';
import {
  containers,
  type ContainerRow,
  type ContainerSource,
  type DesiredPower,
  type ProfileRow,
} from './schema/index.ts';
import { parseBool, TRUE_VALUE_SQL_PATTERN } from '../util/parse-bool.ts';

export const CONTAINER_KIND = 'container';

// Expansion and the nics' preparation are files of their own; their importers find them here too.
export { type ContainerInput, expandContainer, expandStoredContainer, loadProfiles } from './container-expand.ts';
export { checkNicFeatures, type NicFeatureProbe, prepareNics, withNicHwaddrs } from './container-nic-prep.ts';

/** A container's URL under one of the two collections the container API is served on. */
export function containerUrl(
  c: { name: string; project: string },
  collection: 'containers' | 'instances' = 'containers',
): string {
  return `/1.0/${collection}/${encodeURIComponent(c.name)}${c.project === 'default' ? '' : `?project=${encodeURIComponent(c.project)}`}`;
}

/**
 * Validate local config/devices, and the expanded result: exactly one root disk on an existing
 * pool. `volatile.*` keys may be kept as they are but never set by a client.
 */
export async function validateContainer(
  db: DbOrTx,
  profileProject: string,
  input: ContainerInput,
  current?: Record<string, string>,
  probe?: NicFeatureProbe,
  nicHost?: { probe: NicHostProbe; current?: Pick<ContainerInput, 'profiles' | 'devices'> },
): Promise<ReturnType<typeof expandConfig>> {
  const { volatile, rest } = splitVolatile(input.config);
  for (const [k, v] of Object.entries(volatile))
    if (current?.[k] !== v) throw new ValidationError(`Container config key "${k}" is read-only`);
  validateConfig('container', rest, instanceConfigKeys);
  validateDevices(input.devices);
  const expanded = await expandContainer(db, profileProject, input);
  validateConfig('container', splitVolatile(expanded.config).rest, instanceConfigKeys);
  validateExpandedDevices(expanded.devices);
  const roots = Object.entries(expanded.devices).filter(([, d]) => d.type === 'disk' && d.path === '/');
  if (roots.length !== 1)
    throw new ValidationError(
      roots.length
        ? 'A container can have only one root disk device'
        : 'A container needs a root disk device (path "/" on a storage pool), from its profiles or its own devices',
    );
  const pool = roots[0]![1].pool!;
  const p = (await cachedPools(db)).find((row) => row.name === pool);
  if (!p || p.deletingAt) throw new ValidationError(`The root disk's storage pool "${pool}" does not exist`);
  if (probe) await checkNicFeatures(expanded.devices, probe);
  // Against what it has now, its profiles' nics too (a physical parent is not on the host while it runs).
  if (nicHost)
    await checkNicHost(
      expanded.devices,
      nicHost.probe,
      nicHost.current && (await expandContainer(db, profileProject, { ...nicHost.current, config: {} })).devices,
    );
  return expanded;
}

export function splitVolatile(config: Record<string, string>) {
  const volatile: Record<string, string> = {};
  const rest: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) (k.startsWith('volatile.') ? volatile : rest)[k] = v;
  return { volatile, rest };
}

export async function listContainers(db: DbOrTx, project: string): Promise<ContainerRow[]> {
  return db
    .select()
    .from(containers)
    .where(and(eq(containers.project, project), isNull(containers.deletingAt)))
    .orderBy(asc(containers.name));
}

export async function readContainer(db: DbOrTx, project: string, name: string): Promise<ContainerRow> {
  const [row] = await db
    .select()
    .from(containers)
    .where(and(eq(containers.project, project), eq(containers.name, name), isNull(containers.deletingAt)));
  if (!row) throw new NotFoundError(`Container "${name}" not found`);
  return row;
}

export { readContainerById } from './container-by-id.ts';

export async function insertContainer(
  tx: DbOrTx,
  project: string,
  name: string,
  input: ContainerInput,
  source: ContainerSource,
  power: DesiredPower,
  id: string = randomUUID(),
): Promise<ContainerRow> {
  validateContainerName(name);
  input = { ...input, config: await prepareNics(tx, undefined, project, input) };
  try {
    // The next idmap index, in the insert itself (one statement).
    const next = sql`(select coalesce(max(${containers.idmapIndex}), 0) + 1 from ${containers})`;
    const [row] = await tx
      .insert(containers)
      .values({ id, project, name, ...input, source, power, idmapIndex: next })
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Container "${name}" already exists`);
    throw e;
  }
}

/** Any desired change bumps the generation (the reconciler converges it). */
export async function bumpContainer(
  tx: DbOrTx,
  id: string,
  set: Partial<typeof containers.$inferInsert> = {},
): Promise<ContainerRow> {
  try {
    const [row] = await tx
      .update(containers)
      .set({ ...set, generation: sql`${containers.generation} + 1` })
      .where(eq(containers.id, id))
      .returning();
    if (!row) throw new NotFoundError('Container not found');
    return row;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Container "${set.name ?? ''}" already exists`);
    throw e;
  }
}

/**
 * A client's edit based on the row it read (`generation`): applied only if nothing was written since,
 * else StaleWriteError (the caller reads again: If-Match is checked anew, a PATCH merges again).
 */
export async function bumpContainerAt(...args: Parameters<typeof bumpContainerAtInFlight>): Promise<ContainerRow> {
  return (await bumpContainerAtInFlight(...args)).row;
}

/**
 * bumpContainerAt whose UPDATE, the transaction's last statement, is left in flight (leave-in-flight.ts):
 * it resolves once the UPDATE is sent, so a transaction callback that returns `row` unawaited has its
 * COMMIT go out right behind it, one round trip less. Nothing before the UPDATE writes (prepareNics reads
 * and locks), so a StaleWriteError, which `row` rejects with after the commit, has committed nothing.
 */
export async function bumpContainerAtInFlight(
  tx: DbOrTx,
  id: string,
  generation: number,
  set: Partial<typeof containers.$inferInsert>,
  known?: { project: string; profiles: ProfileRow[] },
): Promise<{ row: Promise<ContainerRow> }> {
  if (set.config && set.devices && set.profiles) {
    const project =
      known?.project ??
      (await tx.select({ project: containers.project }).from(containers).where(eq(containers.id, id)))[0]?.project;
    if (project !== undefined)
      set = {
        ...set,
        config: await prepareNics(
          tx,
          id,
          project,
          { profiles: set.profiles, config: set.config, devices: set.devices },
          known?.profiles,
        ),
      };
  }
  const row = bumpIfUnchanged(tx, id, generation, set).then((r) => {
    if (!r) throw new StaleWriteError('The container');
    return r;
  });
  return { row: leaveInFlight(row) };
}

/** A removed container's own row (its removal's last transaction: delete-container-rows.ts). */
export async function deleteContainerRow(db: DbOrTx, id: string): Promise<void> {
  await db.delete(containers).where(eq(containers.id, id));
}

/**
 * At svcd start, a start request (a new generation) for each container the boot starts, in one statement: the
 * boot sequencer waits for each start to converge. Returns each container's new generation.
 */
export async function requestBootStarts(db: DbOrTx, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const seq = sql`coalesce((${containers.powerRequest}->>'seq')::int, 0) + 1`;
  const rows = await db
    .update(containers)
    .set({
      power: 'running',
      powerRequest: sql`jsonb_build_object('action', 'start', 'force', false, 'timeout', -1, 'seq', ${seq})`,
      generation: sql`${containers.generation} + 1`,
    })
    .where(inArray(containers.id, ids))
    .returning({ id: containers.id, generation: containers.generation });
  return new Map(rows.map((r) => [r.id, r.generation]));
}

/**
 * DELETE of a container by name: marked for deletion in one statement when it exists and is not protected;
 * else it is read to say why (NotFoundError, or ForbiddenError for `security.protection.delete`).
 */
export async function markContainerDeletingByName(tx: DbOrTx, project: string, name: string): Promise<ContainerRow> {
  const [row] = await tx
    .update(containers)
    .set({ deletingAt: new Date(), power: 'stopped', generation: sql`${containers.generation} + 1` })
    .where(
      and(
        eq(containers.project, project),
        eq(containers.name, name),
        isNull(containers.deletingAt),
        sql`coalesce(${containers.config}->>'security.protection.delete', '') !~* ${TRUE_VALUE_SQL_PATTERN}`,
      ),
    )
    .returning();
  return row ?? markContainerDeleting(tx, await readContainer(tx, project, name));
}

export async function markContainerDeleting(tx: DbOrTx, c: ContainerRow): Promise<ContainerRow> {
  if (parseBool(c.config['security.protection.delete']))
    throw new ForbiddenError(`Container "${c.name}" is protected against deletion (security.protection.delete)`);
  return bumpContainer(tx, c.id, { deletingAt: new Date(), power: 'stopped' });
}

const isProtected = (c: ContainerRow) => parseBool(c.config['security.protection.delete']);

/** A write on the owner's behalf, applied only if nothing was written since `generation` was read. */
async function bumpIfUnchanged(
  db: DbOrTx,
  id: string,
  generation: number,
  set: Partial<typeof containers.$inferInsert>,
): Promise<ContainerRow | undefined> {
  const [row] = await db
    .update(containers)
    .set({ ...set, generation: sql`${containers.generation} + 1` })
    .where(and(eq(containers.id, id), eq(containers.generation, generation), isNull(containers.deletingAt)))
    .returning();
  return row;
}

/**
 * The container shut itself down (init powered off or exited cleanly) while desired running: its owner's doing, so
 * desired power follows, bumping the generation. Only if the row is still at `generation` (else undefined).
 */
export function recordContainerPoweredOff(
  db: DbOrTx,
  id: string,
  generation: number,
): Promise<ContainerRow | undefined> {
  return bumpIfUnchanged(db, id, generation, { power: 'stopped' });
}

/**
 * An ephemeral container stopped: it is deleted (the reconciler removes it, as for a DELETE). One protected by
 * `security.protection.delete` is kept, desired stopped. Only if the row is still at `c.generation`.
 */
export async function retireEphemeralContainer(
  db: DbOrTx,
  c: ContainerRow,
): Promise<{ row: ContainerRow; deleting: boolean } | undefined> {
  const deleting = !isProtected(c);
  const row = await bumpIfUnchanged(
    db,
    c.id,
    c.generation,
    deleting ? { power: 'stopped', deletingAt: new Date() } : { power: 'stopped' },
  );
  return row && { row, deleting };
}

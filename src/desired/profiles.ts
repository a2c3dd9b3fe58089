import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { validateConfig } from './config-keys.ts';
import { expandStoredContainer, validateContainer, withNicHwaddrs } from './containers.ts';
import { checkContainerNics, lockNicNetworks } from './network-nics.ts';
import { checkContainerProxies } from './proxy-checks.ts';
import { validateDevices } from './devices.ts';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  StaleWriteError,
  ValidationError,
  isUniqueViolation,
} from './errors.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { validateName } from './names.ts';
import { DEFAULT_PROJECT, profileProjectOf } from './profile-project.ts';
import { containers, containerSnapshots, profiles, projects, type ProfileRow } from './schema/index.ts';
import { describeUsers, usedByReader, usedByUrls } from './used-by.ts';

export interface ProfileInput {
  description: string;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

function validateProfile(input: ProfileInput): void {
  validateConfig('profile', input.config, instanceConfigKeys);
  validateDevices(input.devices);
}

export async function listProfiles(db: DbOrTx, project: string): Promise<ProfileRow[]> {
  return db.select().from(profiles).where(eq(profiles.project, project)).orderBy(asc(profiles.name));
}

export async function readProfile(db: DbOrTx, project: string, name: string): Promise<ProfileRow> {
  const [row] = await db
    .select()
    .from(profiles)
    .where(and(eq(profiles.project, project), eq(profiles.name, name)));
  if (!row) throw new NotFoundError(`Profile "${name}" not found`);
  return row;
}

/** URLs of the containers and container snapshots naming a profile (one reader per list: see used-by.ts). */
export async function profileUsedBy(db: DbOrTx, project: string, name: string): Promise<string[]> {
  return usedByReader(db).profile(project, name);
}

/**
 * Inside the transaction that writes a container naming `names`: check they exist in the profile
 * project and hold them (FOR KEY SHARE) until it commits, so a concurrent delete or rename of one
 * waits for this write and then sees the container (or this write waits and then sees it gone: 400).
 * A profile write holds its row FOR UPDATE, so the rows returned are the ones committed last: what the
 * write expands the container with.
 */
export async function lockProfiles(tx: DbOrTx, profileProject: string, names: string[]): Promise<ProfileRow[]> {
  if (names.length === 0) return [];
  const rows = await tx
    .select()
    .from(profiles)
    .where(and(eq(profiles.project, profileProject), inArray(profiles.name, names)))
    .for('key share');
  const found = new Set(rows.map((r) => r.name));
  for (const n of names) if (!found.has(n)) throw new ValidationError(`Profile "${n}" does not exist`);
  return rows;
}

/** The profile row, locked against concurrent container writes naming it (see lockProfiles). */
async function lockProfile(tx: DbOrTx, project: string, name: string): Promise<ProfileRow> {
  const [row] = await tx
    .select()
    .from(profiles)
    .where(and(eq(profiles.project, project), eq(profiles.name, name)))
    .for('update');
  if (!row) throw new NotFoundError(`Profile "${name}" not found`);
  return row;
}

/** The projects whose containers use the profiles of `profileProject`. */
async function projectsUsingProfilesOf(tx: DbOrTx, profileProject: string): Promise<string[]> {
  if (profileProject !== DEFAULT_PROJECT) return [profileProject];
  const rows = await tx.select({ name: projects.name, config: projects.config }).from(projects);
  return rows.filter((p) => profileProjectOf(p) === DEFAULT_PROJECT).map((p) => p.name);
}

/**
 * A profile's change is a change of every container that uses it: their expanded config is what the
 * reconciler converges, so each gets a new generation (in the profile write's transaction) to converge.
 */
export async function bumpContainersUsingProfile(
  tx: DbOrTx,
  profileProject: string,
  profile: string,
): Promise<{ id: string; name: string; generation: number }[]> {
  const using = await projectsUsingProfilesOf(tx, profileProject);
  if (using.length === 0) return [];
  const rows = await tx
    .update(containers)
    .set({ generation: sql`${containers.generation} + 1` })
    .where(
      and(
        inArray(containers.project, using),
        sql`${containers.profiles} @> ${JSON.stringify([profile])}::jsonb`,
        isNull(containers.deletingAt),
      ),
    )
    .returning();
  // A nic the profile gave them gets its volatile hwaddr in the same write (and one it took away loses it).
  for (const c of rows) {
    const config = withNicHwaddrs(c.config, (await expandStoredContainer(tx, c)).devices);
    if (JSON.stringify(config) !== JSON.stringify(c.config))
      await tx.update(containers).set({ config }).where(eq(containers.id, c.id));
  }
  return rows.map((c) => ({ id: c.id, name: c.name, generation: c.generation }));
}

export async function createProfile(
  db: DbOrTx,
  project: string,
  name: string,
  input: ProfileInput,
): Promise<ProfileRow> {
  validateName('Profile', name);
  validateProfile(input);
  try {
    return await db.transaction(async (tx) => {
      await lockNicNetworks(tx, input.devices);
      const [row] = await tx
        .insert(profiles)
        .values({ project, name, ...input })
        .returning();
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Profile "${name}" already exists`);
    throw e;
  }
}

/**
 * Replace description, config and devices (PUT; PATCH callers pass the merged values). Refused (400,
 * nothing written) when a container using the profile would be left invalid, such as without its root
 * disk (LXD: "At least one instance relies on this profile's root disk device"). With `generation` (the
 * one the caller read and merged from) only if nothing was written since, else StaleWriteError.
 */
export async function updateProfile(
  db: DbOrTx,
  project: string,
  name: string,
  input: ProfileInput,
  generation?: number,
): Promise<ProfileRow> {
  validateProfile(input);
  return db.transaction(async (tx) => {
    const prev = await lockProfile(tx, project, name);
    if (generation !== undefined && prev.generation !== generation) throw new StaleWriteError(`Profile "${name}"`);
    await lockNicNetworks(tx, input.devices);
    // The generation counts the one change, whatever is written back and forth to judge it.
    const write = async (values: ProfileInput) =>
      (
        await tx
          .update(profiles)
          .set({ ...values, generation: prev.generation + 1 })
          .where(and(eq(profiles.project, project), eq(profiles.name, name)))
          .returning()
      )[0]!;
    const row = await write(input);
    const broken = await invalidUsers(tx, project, name);
    if (broken.length === 0) return row;
    // Only containers this change breaks count: one that was already invalid must not block every edit.
    await write({ description: prev.description, config: prev.config, devices: prev.devices });
    // (by the reason too: one that was invalid for another reason may not be made invalid for this one)
    const before = new Set((await invalidUsers(tx, project, name)).map((b) => `${b.url}\0${b.reason}`));
    const caused = broken.find((b) => !before.has(`${b.url}\0${b.reason}`));
    if (caused)
      throw new ValidationError(
        `At least one container relies on this profile: ${caused.url} would be invalid: ${caused.reason}`,
      );
    return write(input);
  });
}

/** The live containers naming the profile that do not validate with the profile as the transaction has it now. */
async function invalidUsers(tx: DbOrTx, project: string, name: string): Promise<{ url: string; reason: string }[]> {
  const users = await projectsUsingProfilesOf(tx, project);
  const cts = await tx
    .select()
    .from(containers)
    .where(
      and(
        inArray(containers.project, users),
        isNull(containers.deletingAt),
        sql`${containers.profiles} @> ${JSON.stringify([name])}::jsonb`,
      ),
    )
    .orderBy(asc(containers.project), asc(containers.name));
  const out: { url: string; reason: string }[] = [];
  for (const c of cts) {
    try {
      const { devices } = await expandStoredContainer(tx, c);
      await checkContainerNics(tx, c.id, devices);
      // A proxy the profile brings: its nat address, and a listen address no other container's proxy uses.
      await checkContainerProxies(tx, c, devices);
      await validateContainer(tx, project, c, c.config);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      out.push({ url: usedByUrls.container(c), reason: e.message });
    }
  }
  return out;
}

/**
 * Rename a profile. As in LXD (whose instances refer to profiles by id), the containers and container
 * snapshots naming it follow: their profile lists name the new name, in the same transaction. Their
 * expanded configuration does not change, so their generation does not either.
 */
export async function renameProfile(db: Db, project: string, name: string, newName: string): Promise<ProfileRow> {
  if (name === 'default') throw new ForbiddenError('The "default" profile cannot be renamed');
  validateName('Profile', newName);
  try {
    return await db.transaction(async (tx) => {
      await lockProfile(tx, project, name);
      const [row] = await tx
        .update(profiles)
        .set({ name: newName, generation: sql`${profiles.generation} + 1` })
        .where(and(eq(profiles.project, project), eq(profiles.name, name)))
        .returning();
      const users = await projectsUsingProfilesOf(tx, project);
      const holds = (col: typeof containers.profiles | typeof containerSnapshots.profiles) =>
        sql`${col} @> ${JSON.stringify([name])}::jsonb`;
      const renamed = (col: typeof containers.profiles | typeof containerSnapshots.profiles) =>
        sql`(select coalesce(jsonb_agg(case when t.e = ${name}::text then ${newName}::text else t.e end order by t.i), '[]'::jsonb) from jsonb_array_elements_text(${col}) with ordinality as t(e, i))`;
      await tx
        .update(containers)
        .set({ profiles: renamed(containers.profiles) })
        .where(and(inArray(containers.project, users), holds(containers.profiles)));
      await tx
        .update(containerSnapshots)
        .set({ profiles: renamed(containerSnapshots.profiles) })
        .where(
          and(
            holds(containerSnapshots.profiles),
            inArray(
              containerSnapshots.containerId,
              tx.select({ id: containers.id }).from(containers).where(inArray(containers.project, users)),
            ),
          ),
        );
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Profile "${newName}" already exists`);
    throw e;
  }
}

/**
 * Delete a profile no container or container snapshot names (LXD: "Profile is currently in use"). The
 * check and the delete are one transaction holding the profile's row, so a container written
 * concurrently either is seen here or finds the profile gone (see lockProfiles).
 */
export async function deleteProfile(db: Db, project: string, name: string): Promise<void> {
  if (name === 'default') throw new ForbiddenError('The "default" profile cannot be deleted');
  await db.transaction(async (tx) => {
    await lockProfile(tx, project, name);
    const used = await usedByReader(tx).profile(project, name);
    if (used.length > 0) throw new ValidationError(`Profile is currently in use by ${describeUsers(used)}`);
    await tx.delete(profiles).where(and(eq(profiles.project, project), eq(profiles.name, name)));
  });
}

import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { validateConfig } from './config-keys.ts';
import { validateDevices } from './devices.ts';
import { ConflictError, ForbiddenError, NotFoundError, StaleWriteError, isUniqueViolation } from './errors.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { validateName } from './names.ts';
import { profiles, type ProfileRow } from './schema/index.ts';

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
  const [row] = await db.select().from(profiles).where(and(eq(profiles.project, project), eq(profiles.name, name)));
  if (!row) throw new NotFoundError(`Profile "${name}" not found`);
  return row;
}

/**
 * URLs of the containers using a profile. Containers arrive with the containers issue; until
 * then nothing can use a profile, so this is honestly empty.
 */
export async function profileUsedBy(_db: DbOrTx, _project: string, _name: string): Promise<string[]> {
  return [];
}

export async function createProfile(db: DbOrTx, project: string, name: string, input: ProfileInput): Promise<ProfileRow> {
  validateName('Profile', name);
  validateProfile(input);
  try {
    const [row] = await db.insert(profiles).values({ project, name, ...input }).returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Profile "${name}" already exists`);
    throw e;
  }
}

/**
 * Replace description, config and devices (PUT; PATCH callers pass the merged values). With
 * `generation` (the one the caller read and merged from) only if nothing was written since, else
 * StaleWriteError.
 */
export async function updateProfile(db: DbOrTx, project: string, name: string, input: ProfileInput, generation?: number): Promise<ProfileRow> {
  validateProfile(input);
  const [row] = await db
    .update(profiles)
    .set({ ...input, generation: sql`${profiles.generation} + 1` })
    .where(and(eq(profiles.project, project), eq(profiles.name, name), generation === undefined ? undefined : eq(profiles.generation, generation)))
    .returning();
  if (!row) throw generation === undefined ? new NotFoundError(`Profile "${name}" not found`) : new StaleWriteError(`Profile "${name}"`);
  return row;
}

export async function renameProfile(db: Db, project: string, name: string, newName: string): Promise<ProfileRow> {
  if (name === 'default') throw new ForbiddenError('The "default" profile cannot be renamed');
  validateName('Profile', newName);
  try {
    const [row] = await db
      .update(profiles)
      .set({ name: newName, generation: sql`${profiles.generation} + 1` })
      .where(and(eq(profiles.project, project), eq(profiles.name, name)))
      .returning();
    if (!row) throw new NotFoundError(`Profile "${name}" not found`);
    return row;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Profile "${newName}" already exists`);
    throw e;
  }
}

export async function deleteProfile(db: Db, project: string, name: string): Promise<void> {
  if (name === 'default') throw new ForbiddenError('The "default" profile cannot be deleted');
  const used = await profileUsedBy(db, project, name);
  if (used.length > 0) throw new ConflictError(`Profile "${name}" is in use by ${used.join(', ')}`);
  const rows = await db
    .delete(profiles)
    .where(and(eq(profiles.project, project), eq(profiles.name, name)))
    .returning({ name: profiles.name });
  if (rows.length === 0) throw new NotFoundError(`Profile "${name}" not found`);
}

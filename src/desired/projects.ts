import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { isBool, isAny, validateConfig, type KeyTable } from './config-keys.ts';
import { parseBool } from '../util/parse-bool.ts';
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  StaleWriteError,
  ValidationError,
  isForeignKeyViolation,
  isUniqueViolation,
} from './errors.ts';
import { validateName } from './names.ts';
import { profiles, projects, type ProjectRow } from './schema/index.ts';
import { describeUsers, usedByReader } from './used-by.ts';
import { DEFAULT_PROJECT, profileProjectOf } from './profile-project.ts';

export { DEFAULT_PROJECT, profileProjectOf };

export const projectConfigKeys: KeyTable = {
  exact: { 'features.images': isBool, 'features.profiles': isBool },
  prefixes: { 'user.': isAny },
};
const FEATURE_KEYS = ['features.images', 'features.profiles'];

export interface ProjectInput {
  description?: string | undefined;
  config?: Record<string, string> | undefined;
}

export async function listProjects(db: DbOrTx): Promise<ProjectRow[]> {
  return db.select().from(projects).orderBy(asc(projects.name));
}

export async function readProject(db: DbOrTx, name: string): Promise<ProjectRow> {
  const [row] = await db.select().from(projects).where(eq(projects.name, name));
  if (!row) throw new NotFoundError(`Project "${name}" not found`);
  return row;
}

/** URLs of what the project holds: containers, images, profiles, custom volumes (see used-by.ts). */
export async function projectUsedBy(db: DbOrTx, p: ProjectRow): Promise<string[]> {
  return usedByReader(db).project(p.name);
}

/** The project's row, locked until the transaction ends: container and image inserts (their foreign key) wait. */
async function lockProject(tx: DbOrTx, name: string): Promise<ProjectRow> {
  const [row] = await tx.select().from(projects).where(eq(projects.name, name)).for('update');
  if (!row) throw new NotFoundError(`Project "${name}" not found`);
  return row;
}

/** A project is empty when it holds nothing but its own `default` profile (as in LXD). */
async function assertEmpty(db: DbOrTx, p: ProjectRow, what: string): Promise<void> {
  const own = `/1.0/profiles/default?project=${encodeURIComponent(p.name)}`;
  const held = (await projectUsedBy(db, p)).filter((u) => u !== own);
  if (held.length) throw new ValidationError(`${what}: project "${p.name}" still holds ${describeUsers(held)}`);
}

function normalizeConfig(config: Record<string, string>): Record<string, string> {
  validateConfig('project', config, projectConfigKeys);
  return config;
}

export async function createProject(db: Db, input: ProjectInput & { name: string }): Promise<ProjectRow> {
  validateName('Project', input.name);
  // New projects isolate images and profiles unless told otherwise.
  const config = normalizeConfig({ 'features.images': 'true', 'features.profiles': 'true', ...(input.config ?? {}) });
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(projects)
        .values({ name: input.name, description: input.description ?? '', config })
        .returning();
      if (profileProjectOf(row!) === row!.name)
        await tx.insert(profiles).values({ project: row!.name, name: 'default', description: 'Default svcd profile' });
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Project "${input.name}" already exists`);
    throw e;
  }
}

/** Replace description and config (PUT; PATCH callers pass the merged values). */
/**
 * Replace description and config. With `generation` (the one the caller read and merged from) only
 * if nothing was written since, else StaleWriteError: the update is conditional on it.
 */
export async function updateProject(
  db: Db,
  name: string,
  input: Required<ProjectInput>,
  generation?: number,
): Promise<ProjectRow> {
  const config = normalizeConfig(input.config);
  return db.transaction(async (tx) => {
    const cur = await lockProject(tx, name);
    if (generation !== undefined && cur.generation !== generation) throw new StaleWriteError(`Project "${name}"`);
    const featuresChanged = FEATURE_KEYS.some((k) => parseBool(cur.config[k], true) !== parseBool(config[k], true));
    if (featuresChanged) {
      if (name === DEFAULT_PROJECT) throw new ValidationError('The features of the default project cannot be changed');
      await assertEmpty(tx, cur, 'Features can only be changed on empty projects');
    }
    const [row] = await tx
      .update(projects)
      .set({ description: input.description, config, generation: sql`${projects.generation} + 1` })
      .where(and(eq(projects.name, name), eq(projects.generation, cur.generation)))
      .returning();
    // Another transaction wrote the row after it was read here (PostgreSQL): nothing of this stays.
    if (!row) throw new StaleWriteError(`Project "${name}"`);
    const hadOwn = profileProjectOf(cur) === name;
    const hasOwn = profileProjectOf(row!) === name;
    if (!hadOwn && hasOwn)
      await tx.insert(profiles).values({ project: name, name: 'default', description: 'Default svcd profile' });
    if (hadOwn && !hasOwn) await tx.delete(profiles).where(eq(profiles.project, name));
    return row!;
  });
}

export async function renameProject(db: Db, name: string, newName: string): Promise<ProjectRow> {
  if (name === DEFAULT_PROJECT) throw new ForbiddenError('The "default" project cannot be renamed');
  validateName('Project', newName);
  try {
    return await db.transaction(async (tx) => {
      const cur = await lockProject(tx, name);
      await assertEmpty(tx, cur, 'Only empty projects can be renamed');
      const [row] = await tx
        .update(projects)
        .set({ name: newName, generation: sql`${projects.generation} + 1` })
        .where(eq(projects.name, name))
        .returning();
      return row!;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Project "${newName}" already exists`);
    throw e;
  }
}

/**
 * Delete an empty project (LXD: "Only empty projects can be removed"). The check and the delete are
 * one transaction holding the project's row, so a container or image added meanwhile is either seen
 * by the check or refused by its foreign key.
 */
export async function deleteProject(db: Db, name: string): Promise<void> {
  if (name === DEFAULT_PROJECT) throw new ForbiddenError('The "default" project cannot be deleted');
  const what = 'Only empty projects can be removed';
  try {
    await db.transaction(async (tx) => {
      const cur = await lockProject(tx, name);
      await assertEmpty(tx, cur, what);
      await tx.delete(projects).where(eq(projects.name, name));
    });
  } catch (e) {
    if (isForeignKeyViolation(e)) throw new ValidationError(`${what}: project "${name}" is still in use`);
    throw e;
  }
}

/** First start: the `default` project and its `default` profile. Idempotent; true when it created them. */
export async function ensureDefaultProject(db: DbOrTx): Promise<boolean> {
  const created = await db
    .insert(projects)
    .values({
      name: DEFAULT_PROJECT,
      description: 'Default svcd project',
      config: { 'features.images': 'true', 'features.profiles': 'true' },
    })
    .onConflictDoNothing()
    .returning({ name: projects.name });
  await db
    .insert(profiles)
    .values({ project: DEFAULT_PROJECT, name: 'default', description: 'Default svcd profile' })
    .onConflictDoNothing();
  return created.length > 0;
}

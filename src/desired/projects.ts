import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/types.ts';
import { isBool, isAny, parseBool, validateConfig, type KeyTable } from './config-keys.ts';
import { ConflictError, ForbiddenError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { validateName } from './names.ts';
import { profiles, projects, type ProjectRow } from './schema/index.ts';

export const DEFAULT_PROJECT = 'default';

export const projectConfigKeys: KeyTable = {
  exact: { 'features.images': isBool, 'features.profiles': isBool },
  prefixes: { 'user.': isAny },
};
const FEATURE_KEYS = ['features.images', 'features.profiles'];

export interface ProjectInput {
  description?: string | undefined;
  config?: Record<string, string> | undefined;
}

/** The project whose profiles a project uses: itself with features.profiles, else `default`. */
export function profileProjectOf(p: ProjectRow): string {
  return p.name === DEFAULT_PROJECT || parseBool(p.config['features.profiles']) ? p.name : DEFAULT_PROJECT;
}

export async function listProjects(db: DbOrTx): Promise<ProjectRow[]> {
  return db.select().from(projects).orderBy(asc(projects.name));
}

export async function readProject(db: DbOrTx, name: string): Promise<ProjectRow> {
  const [row] = await db.select().from(projects).where(eq(projects.name, name));
  if (!row) throw new NotFoundError(`Project "${name}" not found`);
  return row;
}

/** URLs of what lives in the project (profiles now; containers and images as they arrive). */
export async function projectUsedBy(db: DbOrTx, p: ProjectRow): Promise<string[]> {
  if (profileProjectOf(p) !== p.name) return [];
  const rows = await db.select({ name: profiles.name }).from(profiles).where(eq(profiles.project, p.name)).orderBy(asc(profiles.name));
  const q = p.name === DEFAULT_PROJECT ? '' : `?project=${encodeURIComponent(p.name)}`;
  return rows.map((r) => `/1.0/profiles/${encodeURIComponent(r.name)}${q}`);
}

/** A project is empty when it holds nothing but its own `default` profile. */
async function assertEmpty(db: DbOrTx, p: ProjectRow, what: string): Promise<void> {
  const used = await projectUsedBy(db, p);
  const own = `/1.0/profiles/default?project=${encodeURIComponent(p.name)}`;
  if (used.some((u) => u !== own)) throw new ValidationError(`${what}: the project is not empty (${used.length} objects in use)`);
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
export async function updateProject(db: Db, name: string, input: Required<ProjectInput>, generation?: number): Promise<ProjectRow> {
  const config = normalizeConfig(input.config);
  return db.transaction(async (tx) => {
    const cur = await readProject(tx, name);
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
    if (!hadOwn && hasOwn) await tx.insert(profiles).values({ project: name, name: 'default', description: 'Default svcd profile' });
    if (hadOwn && !hasOwn) await tx.delete(profiles).where(eq(profiles.project, name));
    return row!;
  });
}

export async function renameProject(db: Db, name: string, newName: string): Promise<ProjectRow> {
  if (name === DEFAULT_PROJECT) throw new ForbiddenError('The "default" project cannot be renamed');
  validateName('Project', newName);
  try {
    return await db.transaction(async (tx) => {
      const cur = await readProject(tx, name);
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

export async function deleteProject(db: Db, name: string): Promise<void> {
  if (name === DEFAULT_PROJECT) throw new ForbiddenError('The "default" project cannot be deleted');
  await db.transaction(async (tx) => {
    const cur = await readProject(tx, name);
    await assertEmpty(tx, cur, 'Only empty projects can be deleted');
    await tx.delete(projects).where(eq(projects.name, name));
  });
}

/** First start: the `default` project and its `default` profile. Idempotent; true when it created them. */
export async function ensureDefaultProject(db: DbOrTx): Promise<boolean> {
  const created = await db
    .insert(projects)
    .values({ name: DEFAULT_PROJECT, description: 'Default svcd project', config: { 'features.images': 'true', 'features.profiles': 'true' } })
    .onConflictDoNothing()
    .returning({ name: projects.name });
  await db.insert(profiles).values({ project: DEFAULT_PROJECT, name: 'default', description: 'Default svcd profile' }).onConflictDoNothing();
  return created.length > 0;
}

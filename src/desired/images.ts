import { and, asc, desc, eq, like, sql } from 'drizzle-orm';
import { databaseStateOf, relaxedOf } from '../db/database-state.ts';
import type { DbOrTx } from '../db/types.ts';
import { createLatestStampWriter } from '../util/latest-stamp-writer.ts';
import { parseBool } from '../util/parse-bool.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { DEFAULT_PROJECT, readProject } from './projects.ts';
import { imageAliases, images, type ImageAliasRow, type ImageRow, type ProjectRow } from './schema/index.ts';

/**
 * Image rows. Every function takes the project a request or a container is in; projects without
 * `features.images` share the `default` project's images (imageProjectOf).
 */

/** The project whose images a project uses: itself with features.images, else `default`. */
export function imageProjectOf(p: ProjectRow): string {
  return p.name === DEFAULT_PROJECT || parseBool(p.config['features.images']) ? p.name : DEFAULT_PROJECT;
}

/**
 * The config keys a container made from an image gets from the image's properties: `image.<property>`
 * (container_image_properties), as LXD sets them at create; they win over the request's own image.* keys.
 */
export function imagePropertyKeys(properties: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(properties).map(([k, v]) => [`image.${k}`, v]));
}

export async function imageProjectFor(db: DbOrTx, project: string): Promise<string> {
  return project === DEFAULT_PROJECT ? project : imageProjectOf(await readProject(db, project));
}

export interface ImageQuery {
  /** Only public images (guests). */
  publicOnly?: boolean;
}

const FINGERPRINT_PREFIX = /^[0-9a-f]{1,64}$/;

export async function listImages(db: DbOrTx, project: string, q: ImageQuery = {}): Promise<ImageRow[]> {
  const p = await imageProjectFor(db, project);
  return db
    .select()
    .from(images)
    .where(and(eq(images.project, p), q.publicOnly ? eq(images.public, true) : undefined))
    .orderBy(asc(images.fingerprint));
}

/** One image by its fingerprint or a unique prefix of it (several matches → 400, none → 404). */
export async function readImage(
  db: DbOrTx,
  project: string,
  fingerprint: string,
  q: ImageQuery = {},
): Promise<ImageRow> {
  const fp = fingerprint.toLowerCase();
  if (!FINGERPRINT_PREFIX.test(fp)) throw new NotFoundError('Image not found');
  const p = await imageProjectFor(db, project);
  const rows = await db
    .select()
    .from(images)
    .where(
      and(
        eq(images.project, p),
        fp.length === 64 ? eq(images.fingerprint, fp) : like(images.fingerprint, `${fp}%`),
        q.publicOnly ? eq(images.public, true) : undefined,
      ),
    )
    .limit(2);
  if (rows.length === 0) throw new NotFoundError('Image not found');
  if (rows.length > 1) throw new ValidationError(`More than one image matches the fingerprint prefix "${fp}"`);
  return rows[0]!;
}

/** The image row if this project already has it (full fingerprint), else undefined. */
export async function findImage(db: DbOrTx, project: string, fingerprint: string): Promise<ImageRow | undefined> {
  const p = await imageProjectFor(db, project);
  const [row] = await db
    .select()
    .from(images)
    .where(and(eq(images.project, p), eq(images.fingerprint, fingerprint)));
  return row;
}

export type NewImage = Omit<ImageRow, 'project' | 'uploadedAt' | 'lastUsedAt' | 'type' | 'updateSource'> &
  Partial<Pick<ImageRow, 'uploadedAt' | 'lastUsedAt' | 'updateSource'>>;

/** Insert an image row (and its aliases) in one transaction; an existing fingerprint or alias → 409. */
export async function insertImage(
  db: DbOrTx,
  project: string,
  image: NewImage,
  aliases: { name: string; description?: string }[] = [],
): Promise<ImageRow> {
  const p = await imageProjectFor(db, project);
  for (const a of aliases) validateAliasName(a.name);
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(images)
        .values({ ...image, project: p, type: 'container', updateSource: image.updateSource ?? null })
        .onConflictDoNothing()
        .returning();
      if (!row) throw new ConflictError('Image with same fingerprint already exists');
      for (const a of aliases) await insertAlias(tx, p, a.name, row.fingerprint, a.description ?? '');
      return row;
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError('An alias with this name already exists');
    throw e;
  }
}

export interface ImageUpdate {
  public: boolean;
  autoUpdate: boolean;
  properties: Record<string, string>;
}

/** A jsonb column equal to `value` (jsonb equality: key order does not matter). */
const jsonbEq = (col: typeof images.properties, value: unknown) => sql`${col} = ${JSON.stringify(value)}::jsonb`;

/**
 * Set the editable fields. With `expected` (the fields as the caller read and merged them, what the
 * ETag is computed from) only if they are still so, compared in the update itself, else StaleWriteError.
 */
export async function updateImage(
  db: DbOrTx,
  project: string,
  fingerprint: string,
  u: ImageUpdate,
  expected?: ImageUpdate,
): Promise<ImageRow> {
  const p = await imageProjectFor(db, project);
  const unchanged =
    expected &&
    and(
      eq(images.public, expected.public),
      eq(images.autoUpdate, expected.autoUpdate),
      jsonbEq(images.properties, expected.properties),
    );
  const [row] = await db
    .update(images)
    .set({ public: u.public, autoUpdate: u.autoUpdate, properties: u.properties })
    .where(and(eq(images.project, p), eq(images.fingerprint, fingerprint), unchanged))
    .returning();
  if (!row) throw expected ? new StaleWriteError('The image') : new NotFoundError('Image not found');
  return row;
}

/** Remove the row (its aliases go with it). Resolves true when no project uses the fingerprint any more. */
export async function deleteImage(db: DbOrTx, project: string, fingerprint: string): Promise<boolean> {
  const p = await imageProjectFor(db, project);
  return db.transaction(async (tx) => {
    await tx.delete(images).where(and(eq(images.project, p), eq(images.fingerprint, fingerprint)));
    return !(await fingerprintInUse(tx, fingerprint));
  });
}

/** Whether any project still has an image with these files. */
export async function fingerprintInUse(db: DbOrTx, fingerprint: string): Promise<boolean> {
  const rows = await db
    .select({ fp: images.fingerprint })
    .from(images)
    .where(eq(images.fingerprint, fingerprint))
    .limit(1);
  return rows.length > 0;
}

/**
 * Record that an instance was created from the image (`last_used_at`). A usage stamp, not desired state:
 * written through the database's relaxed handle (relaxedOf), so that a create waits for one flushed commit
 * (its desired write), not two.
 */
export async function touchImageLastUsed(
  db: DbOrTx,
  project: string,
  fingerprint: string,
  at: Date = new Date(),
): Promise<void> {
  const p = await imageProjectFor(db, project);
  const target = relaxedOf(db);
  // A transaction writes its own; a database's touches of one image at once are merged (latest-stamp-writer.ts).
  const state = databaseStateOf(target);
  if (!state) return writeLastUsed(target, p, fingerprint, at);
  const writer = (state.lastUsedStamps ??= createLatestStampWriter((key, when) => {
    const [proj, fp] = key.split('\0') as [string, string];
    return writeLastUsed(target, proj, fp, when);
  }));
  await writer.touch(`${p}\0${fingerprint}`, at);
}

async function writeLastUsed(db: DbOrTx, project: string, fingerprint: string, at: Date): Promise<void> {
  await db
    .update(images)
    .set({ lastUsedAt: at })
    .where(and(eq(images.project, project), eq(images.fingerprint, fingerprint)));
}

export interface ImageSelector {
  alias?: string | undefined;
  /** Full fingerprint or unique prefix. */
  fingerprint?: string | undefined;
  /** Every given key must match; the most recent matching image wins. */
  properties?: Record<string, string> | undefined;
}

/**
 * The image an instance source names: by alias, by fingerprint (or unique prefix), or the most
 * recent image (creation date, then upload date) whose properties include all the given ones.
 */
export async function resolveImage(db: DbOrTx, project: string, sel: ImageSelector): Promise<ImageRow> {
  if (sel.alias) {
    const alias = await readAlias(db, project, sel.alias);
    return readImage(db, project, alias.fingerprint);
  }
  if (sel.fingerprint) return readImage(db, project, sel.fingerprint);
  if (sel.properties && Object.keys(sel.properties).length > 0) {
    const p = await imageProjectFor(db, project);
    const [row] = await db
      .select()
      .from(images)
      .where(and(eq(images.project, p), sql`${images.properties} @> ${JSON.stringify(sel.properties)}::jsonb`))
      .orderBy(desc(images.createdAt), desc(images.uploadedAt))
      .limit(1);
    if (!row) throw new NotFoundError('No image matches the given properties');
    return row;
  }
  throw new ValidationError('An image source needs an alias, a fingerprint or properties');
}

// --- Aliases --------------------------------------------------------------------------------

/** Alias names: 1..255 printable ASCII, no spaces, no colon (the CLI's remote separator), not `.`/`..`. */
export function validateAliasName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new ValidationError('Alias name is required');
  if (name.length > 255) throw new ValidationError('Alias name is too long (at most 255 characters)');
  if (!/^[\x21-\x7e]+$/.test(name) || name.includes(':') || name.startsWith('/'))
    throw new ValidationError(`Alias name ${JSON.stringify(name)} must be printable ASCII without spaces or colons`);
  if (name === '.' || name === '..') throw new ValidationError(`Alias name cannot be "${name}"`);
  return name;
}

async function insertAlias(
  db: DbOrTx,
  imageProject: string,
  name: string,
  fingerprint: string,
  description: string,
): Promise<ImageAliasRow> {
  const [row] = await db
    .insert(imageAliases)
    .values({ project: imageProject, name, fingerprint, description })
    .onConflictDoNothing()
    .returning();
  if (!row) throw new ConflictError(`Alias "${name}" already exists`);
  return row;
}

/** Aliases of the project, optionally only those of public images (guests) or of one image. */
export async function listAliases(
  db: DbOrTx,
  project: string,
  q: ImageQuery & { fingerprint?: string } = {},
): Promise<ImageAliasRow[]> {
  const p = await imageProjectFor(db, project);
  const rows = await db
    .select({ alias: imageAliases })
    .from(imageAliases)
    .innerJoin(images, and(eq(images.project, imageAliases.project), eq(images.fingerprint, imageAliases.fingerprint)))
    .where(
      and(
        eq(imageAliases.project, p),
        q.publicOnly ? eq(images.public, true) : undefined,
        q.fingerprint ? eq(imageAliases.fingerprint, q.fingerprint) : undefined,
      ),
    )
    .orderBy(asc(imageAliases.name));
  return rows.map((r) => r.alias);
}

export async function readAlias(db: DbOrTx, project: string, name: string, q: ImageQuery = {}): Promise<ImageAliasRow> {
  const [row] = (await listAliasesNamed(db, project, name, q)) as [ImageAliasRow?];
  if (!row) throw new NotFoundError(`Alias "${name}" not found`);
  return row;
}

async function listAliasesNamed(db: DbOrTx, project: string, name: string, q: ImageQuery): Promise<ImageAliasRow[]> {
  const p = await imageProjectFor(db, project);
  const rows = await db
    .select({ alias: imageAliases })
    .from(imageAliases)
    .innerJoin(images, and(eq(images.project, imageAliases.project), eq(images.fingerprint, imageAliases.fingerprint)))
    .where(
      and(eq(imageAliases.project, p), eq(imageAliases.name, name), q.publicOnly ? eq(images.public, true) : undefined),
    );
  return rows.map((r) => r.alias);
}

/** Create an alias; the target is a fingerprint or unique prefix of an image of the project (missing → 404). */
export async function createAlias(
  db: DbOrTx,
  project: string,
  input: { name: string; target: string; description?: string },
): Promise<ImageAliasRow> {
  validateAliasName(input.name);
  const image = await readImage(db, project, input.target);
  try {
    return await insertAlias(db, image.project, input.name, image.fingerprint, input.description ?? '');
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Alias "${input.name}" already exists`);
    throw e;
  }
}

/**
 * Point the alias at `target` with `description`. With `expected` (the alias as the caller read it,
 * what the ETag is computed from) only if it is still so, compared in the update itself, else StaleWriteError.
 */
export async function updateAlias(
  db: DbOrTx,
  project: string,
  name: string,
  input: { target: string; description: string },
  expected?: { fingerprint: string; description: string },
): Promise<ImageAliasRow> {
  const image = await readImage(db, project, input.target);
  const [row] = await db
    .update(imageAliases)
    .set({ fingerprint: image.fingerprint, description: input.description })
    .where(
      and(
        eq(imageAliases.project, image.project),
        eq(imageAliases.name, name),
        expected &&
          and(eq(imageAliases.fingerprint, expected.fingerprint), eq(imageAliases.description, expected.description)),
      ),
    )
    .returning();
  if (!row) throw expected ? new StaleWriteError(`Alias "${name}"`) : new NotFoundError(`Alias "${name}" not found`);
  return row;
}

export async function renameAlias(db: DbOrTx, project: string, name: string, newName: string): Promise<ImageAliasRow> {
  validateAliasName(newName);
  const p = await imageProjectFor(db, project);
  try {
    const [row] = await db
      .update(imageAliases)
      .set({ name: newName })
      .where(and(eq(imageAliases.project, p), eq(imageAliases.name, name)))
      .returning();
    if (!row) throw new NotFoundError(`Alias "${name}" not found`);
    return row;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError(`Alias "${newName}" already exists`);
    throw e;
  }
}

export async function deleteAlias(db: DbOrTx, project: string, name: string): Promise<void> {
  const p = await imageProjectFor(db, project);
  const rows = await db
    .delete(imageAliases)
    .where(and(eq(imageAliases.project, p), eq(imageAliases.name, name)))
    .returning({ name: imageAliases.name });
  if (rows.length === 0) throw new NotFoundError(`Alias "${name}" not found`);
}

/** Point every alias of image `from` at image `to` (same image project): a refresh moves the aliases. */
export async function moveAliases(db: DbOrTx, imageProject: string, from: string, to: string): Promise<number> {
  const rows = await db
    .update(imageAliases)
    .set({ fingerprint: to })
    .where(and(eq(imageAliases.project, imageProject), eq(imageAliases.fingerprint, from)))
    .returning({ name: imageAliases.name });
  return rows.length;
}

import { and, desc, eq, sql } from 'drizzle-orm';
import { databaseStateOf, relaxedOf } from '../db/database-state.ts';
import type { DbOrTx } from '../db/types.ts';
import { createLatestStampWriter } from '../util/latest-stamp-writer.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { insertAlias, readAlias, validateAliasName } from './image-aliases.ts';
import { imageProjectFor, readImage } from './image-reads.ts';
import { images, type ImageRow } from './schema/index.ts';

// The reads and the aliases are files of their own; their importers find them here too.
export {
  findImage,
  type ImageQuery,
  imageProjectFor,
  imageProjectOf,
  imagePropertyKeys,
  listImages,
  readImage,
} from './image-reads.ts';
export {
  createAlias,
  deleteAlias,
  listAliases,
  moveAliases,
  readAlias,
  renameAlias,
  updateAlias,
  validateAliasName,
} from './image-aliases.ts';

/**
 * Image rows. Every function takes the project a request or a container is in; projects without
 * `features.images` share the `default` project's images (imageProjectOf).
 */

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

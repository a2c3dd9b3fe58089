/** Image aliases (the imageAliases table's one writer): each names one image of the same image project. */
import { and, asc, eq } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { type ImageQuery, imageProjectFor, readImage } from './image-reads.ts';
import { type ImageAliasRow, imageAliases, images } from './schema/index.ts';

/** Alias names: 1..255 printable ASCII, no spaces, no colon (the CLI's remote separator), not `.`/`..`. */
export function validateAliasName(name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new ValidationError('Alias name is required');
  if (name.length > 255) throw new ValidationError('Alias name is too long (at most 255 characters)');
  if (!/^[\x21-\x7e]+$/.test(name) || name.includes(':') || name.startsWith('/'))
    throw new ValidationError(`Alias name ${JSON.stringify(name)} must be printable ASCII without spaces or colons`);
  if (name === '.' || name === '..') throw new ValidationError(`Alias name cannot be "${name}"`);
  return name;
}

/** One alias row (also in the transaction that inserts its image: images.ts); its name taken → 409. */
export async function insertAlias(
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

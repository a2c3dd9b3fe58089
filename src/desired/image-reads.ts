/** Image rows read: the project whose images a project uses, listed, one by fingerprint or prefix. */
import { and, asc, eq, like } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { parseBool } from '../util/parse-bool.ts';
import { NotFoundError, ValidationError } from './errors.ts';
import { DEFAULT_PROJECT, readProject } from './projects.ts';
import { type ImageRow, images, type ProjectRow } from './schema/index.ts';

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

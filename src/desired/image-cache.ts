import { and, eq, isNotNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { images, type ImageRow } from './schema/index.ts';

/** Images that refresh from their update_source (auto_update), in every project. */
export async function listAutoUpdateImages(db: DbOrTx, opts: { includeCached: boolean }): Promise<ImageRow[]> {
  return db
    .select()
    .from(images)
    .where(
      and(
        eq(images.autoUpdate, true),
        isNotNull(images.updateSource),
        opts.includeCached ? undefined : eq(images.cached, false),
      ),
    );
}

/** Cached images (pulled for a container) not used since `before` (last_used_at, else uploaded_at). */
export async function listExpiredCachedImages(db: DbOrTx, before: Date): Promise<ImageRow[]> {
  return db
    .select()
    .from(images)
    .where(
      and(
        eq(images.cached, true),
        sql`coalesce(${images.lastUsedAt}, ${images.uploadedAt}) < ${before.toISOString()}::timestamptz`,
      ),
    );
}

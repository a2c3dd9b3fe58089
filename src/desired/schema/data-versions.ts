import { bigint, pgTable, text } from 'drizzle-orm/pg-core';

/**
 * One counter per table that cached reads depend on, bumped by a statement-level trigger in the writer's
 * own transaction (migration 0006). A reader that reads the counters first and the data second never
 * tags old data with a new version, on PGlite and on a PostgreSQL shared by several hosts alike.
 */
export const dataVersions = pgTable('data_versions', {
  name: text('name').primaryKey(),
  version: bigint('version', { mode: 'number' }).notNull().default(0),
});

/**
 * Members of different svcd versions on one database: a newer svcd migrates the schema
 * forward, and an older one keeps running beside it while the schema still allows it. What allows it is
 * recorded in the database itself, since an older svcd cannot know what a newer one's migrations did: the
 * newest migration an older svcd cannot run against (drizzle/compat.json's `breaking`), as the least
 * migration a member must have (`drizzle.svcd_schema_floor`). At start, before migrating, a member compares it
 * and the migrations applied with its own journal; one that is too old refuses to start, changing nothing,
 * and says why. The other members are not affected.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface JournalEntry {
  idx: number;
  when: number;
  tag: string;
}

export interface LocalSchema {
  /** The migrations this svcd has (drizzle/meta/_journal.json). */
  entries: JournalEntry[];
  /** Tags of those an older svcd cannot run against (drizzle/compat.json). */
  breaking: string[];
}

export function readLocalSchema(migrationsFolder: string): LocalSchema {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as {
    entries: JournalEntry[];
  };
  const compat = JSON.parse(readFileSync(path.join(migrationsFolder, 'compat.json'), 'utf8')) as { breaking: string[] };
  return { entries: journal.entries, breaking: compat.breaking };
}

/** The floor this svcd's migrations set: the index of its newest breaking migration (-1: none). */
export function floorOf(local: LocalSchema): number {
  return Math.max(-1, ...local.entries.filter((e) => local.breaking.includes(e.tag)).map((e) => e.idx));
}

export class SchemaTooNewError extends Error {}

/**
 * Whether this svcd may run on a database that has `applied` (drizzle's created_at of each migration, the
 * journal's `when`) and `floor` (undefined: never recorded). Returns how many applied migrations this svcd
 * does not know (a newer member's, compatible); throws a SchemaTooNewError when the database needs more.
 */
export function judgeSchema(local: LocalSchema, applied: readonly number[], floor: number | undefined): number {
  const last = local.entries.at(-1);
  const known = new Set(local.entries.map((e) => e.when));
  const unknown = applied.filter((w) => !known.has(w)).length;
  if (floor !== undefined && floor > (last?.idx ?? -1))
    throw new SchemaTooNewError(
      `The database's schema is newer than this svcd's and no longer compatible with it: it needs migration ${floor} or later, and this svcd's newest is ${last?.idx ?? 'none'} (${last?.tag ?? ''}), with ${unknown} migration(s) applied that it does not know. Upgrade svcd on this member; the other members are not affected, and nothing was changed.`,
    );
  return unknown;
}

/** The table of the floor: one row, raised by each svcd that migrates, never lowered. */
const FLOOR_TABLE_SQL =
  'create table if not exists drizzle.svcd_schema_floor (id int primary key default 1 check (id = 1), floor int not null)';

type Query = (text: string) => Promise<Record<string, unknown>[]>;

/** What the database has: the migrations applied (drizzle's record) and the floor (none on a new database). */
export async function readDatabaseSchema(query: Query): Promise<{ applied: number[]; floor: number | undefined }> {
  const [t] = await query(
    "select to_regclass('drizzle.__drizzle_migrations')::text as applied, to_regclass('drizzle.svcd_schema_floor')::text as floor",
  );
  const applied = t?.applied
    ? (await query('select created_at::bigint::text as w from drizzle.__drizzle_migrations')).map((r) => Number(r.w))
    : [];
  const floor = t?.floor ? (await query('select floor from drizzle.svcd_schema_floor'))[0]?.floor : undefined;
  return { applied, floor: floor === undefined ? undefined : Number(floor) };
}

/** After this svcd migrated: the floor raised to what its migrations need (never lowered). */
export async function raiseFloor(query: Query, floor: number): Promise<void> {
  await query(FLOOR_TABLE_SQL);
  await query(
    `insert into drizzle.svcd_schema_floor as f (id, floor) values (1, ${Math.trunc(floor)}) on conflict (id) do update set floor = greatest(f.floor, excluded.floor)`,
  );
}

/**
 * The check and the floor around a migration: refuses (SchemaTooNewError) before anything is changed, else
 * migrates and raises the floor. Returns how many applied migrations this svcd does not know.
 */
export async function migrateCompatibly(
  query: Query,
  migrationsFolder: string,
  migrate: () => Promise<void>,
): Promise<number> {
  const local = readLocalSchema(migrationsFolder);
  const { applied, floor } = await readDatabaseSchema(query);
  const unknown = judgeSchema(local, applied, floor);
  await migrate();
  await raiseFloor(query, floorOf(local));
  return unknown;
}

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import * as schema from '../desired/schema/index.ts';
import { attachDatabaseState, createDatabaseState } from './database-state.ts';
import { countLocalWrites, learnReach, REACH_QUERIES, type ForeignKey } from './local-writes.ts';
import { installQueryParsers, type ParserClient } from './pglite-parsers.ts';
import { installPreparedStatements, type PreparedClient } from './pglite-prepared.ts';
import type { Database, Db } from './types.ts';

export const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../drizzle');

/** Shared buffers of the embedded database (see openPglite). */
const PGLITE_SHARED_BUFFERS = '16MB';

/** An arbitrary constant: the advisory lock that serializes migrations between cluster members. */
const MIGRATION_LOCK = 7_715_104_211;

/**
 * The embedded database has one writer, this process, which counts its own writes (local-writes.ts,
 * readDataVersion): the data_versions counters serve a server shared by several hosts. On PGlite their
 * triggers only cost a row update per write statement, so they are switched off here (each open, in
 * case a later migration adds one).
 */
const DATA_VERSION_TRIGGERS_OFF = `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT t.tgrelid::regclass AS tbl, t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
           WHERE p.proname = 'bump_data_version' AND NOT t.tgisinternal AND t.tgenabled <> 'D' LOOP
    EXECUTE format('ALTER TABLE %s DISABLE TRIGGER %I', r.tbl, r.tgname);
  END LOOP;
END $$`;

/**
 * Open the store: PGlite in `<stateDir>/database` unless `databaseUrl` names a PostgreSQL server.
 * Applies drizzle-kit migrations before returning.
 */
export async function openDatabase(opts: { stateDir: string; databaseUrl?: string | undefined; poolMax?: number; idleTimeoutS?: number }): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolMax ?? 10, opts.idleTimeoutS);
  return openPglite(path.join(opts.stateDir, 'database'));
}

async function openPglite(dir: string): Promise<Database> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  let client = await PGlite.create(dir);
  // svcd's database is a few MiB: PostgreSQL's default 128 MiB of shared buffers only grows the
  // process (the WASM memory never shrinks). Set once per database (ALTER SYSTEM), it needs a restart.
  const shown = (await client.query<{ shared_buffers: string }>('show shared_buffers')).rows[0]?.shared_buffers;
  if (shown !== PGLITE_SHARED_BUFFERS) {
    await client.exec(`alter system set shared_buffers = '${PGLITE_SHARED_BUFFERS}'`);
    await client.close();
    client = await PGlite.create(dir);
  }
  // Innermost first: the wrappers below keep the query method they find.
  installPreparedStatements(client as unknown as PreparedClient);
  installQueryParsers(client as unknown as ParserClient);
  const db = drizzle(client, { schema });
  const writes = countLocalWrites(client as never);
  attachDatabaseState(db, createDatabaseState(writes));
  try {
    await migrate(db, { migrationsFolder });
    await client.exec(DATA_VERSION_TRIGGERS_OFF);
    const keys = (await client.query<ForeignKey>(REACH_QUERIES.keys)).rows;
    const triggers = (await client.query<{ table: string; fn: string }>(REACH_QUERIES.triggers)).rows;
    learnReach(writes, keys, triggers);
  } catch (e) {
    await client.close().catch(() => {});
    throw e;
  }
  return { db: db as unknown as Db, driver: 'pglite', localWrites: writes, close: () => client.close() };
}

/** As libpq: `?host=/dir` in the URL names the directory of the server's unix socket (postgres.js only reads it from `path`). */
export function unixSocketOf(url: string): { url: string; path?: string } {
  const u = new URL(url);
  const dir = u.searchParams.get('host');
  if (!dir?.startsWith('/')) return { url };
  u.searchParams.delete('host');
  return { url: u.toString(), path: `${dir}/.s.PGSQL.${u.port || 5432}` };
}

async function openPostgres(url: string, poolMax: number, idleTimeoutS: number | undefined): Promise<Database> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  // Migrations run on a single-connection client holding a session advisory lock, so that several
  // hosts starting at once against the same server do not race.
  const { url: plain, ...socket } = unixSocketOf(url);
  const migrator = postgres(plain, { max: 1, onnotice: () => {}, connect_timeout: 10, ...socket });
  try {
    await migrator`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migrate(drizzle(migrator, { schema }), { migrationsFolder });
    await migrator`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await migrator.end({ timeout: 5 });
  }
  const client = postgres(plain, { max: poolMax, onnotice: () => {}, connect_timeout: 10, ...socket, ...(idleTimeoutS ? { idle_timeout: idleTimeoutS } : {}) });
  const db = drizzle(client, { schema });
  await db.execute(sql`select 1`);
  attachDatabaseState(db, createDatabaseState(undefined));
  return { db: db as unknown as Db, driver: 'postgres', localWrites: undefined, close: () => client.end({ timeout: 5 }) };
}

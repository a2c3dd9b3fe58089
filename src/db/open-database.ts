import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import * as schema from '../desired/schema/index.ts';
import { attachDatabaseState, createDatabaseState } from './database-state.ts';
import { countLocalWrites, learnReach, REACH_QUERIES, type ForeignKey } from './local-writes.ts';
import { parsePostgresUrl } from './postgres-url.ts';
import { pipelineBegin, type ReservingClient } from './pipelined-begin.ts';
import { hookPostgresClient, type PostgresJsClient } from './postgres-client-hooks.ts';
import { createVersionListener, type VersionListener } from './data-version-listener.ts';
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

async function openPostgres(url: string, poolMax: number, idleTimeoutS: number | undefined): Promise<Database> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  // Migrations run on a single-connection client holding a session advisory lock, so that several
  // hosts starting at once against the same server do not race.
  const target = parsePostgresUrl(url);
  const socket = target.host ? { host: target.host } : {};
  const migrator = postgres(target.url, { max: 1, onnotice: () => {}, connect_timeout: 10, ...socket });
  try {
    await migrator`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migrate(drizzle(migrator, { schema }), { migrationsFolder });
    await migrator`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await migrator.end({ timeout: 5 });
  }
  // Its own writes' notifications name it (data-version-listener.ts): a name no other process has.
  const origin = `svcd ${randomUUID()}`;
  const client = postgres(target.url, { max: poolMax, onnotice: () => {}, connect_timeout: 10, connection: { application_name: origin }, ...socket, ...(idleTimeoutS ? { idle_timeout: idleTimeoutS } : {}) });
  // Every statement prepared, and this process's own writes counted (what each table's writes reach: as on PGlite).
  pipelineBegin(client as unknown as ReservingClient);
  const own = hookPostgresClient(client as unknown as PostgresJsClient);
  const db = drizzle(client, { schema });
  await db.execute(sql`select 1`);
  learnReach(own, await client.unsafe<ForeignKey[]>(REACH_QUERIES.keys), await client.unsafe<{ table: string; fn: string }[]>(REACH_QUERIES.triggers));
  // One more connection LISTENs for the commits of every host (data-version-listener.ts).
  let listener: VersionListener | undefined;
  const listening = postgres(target.url, {
    max: 1,
    idle_timeout: null,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    connect_timeout: 10,
    connection: { application_name: 'svcd data versions' },
    ...socket,
    // postgres.js's own listen() wires these two options the same way (not in its typings).
    onnotify: (channel: string, payload: string) => listener?.onNotify(channel, payload),
    onclose: () => listener?.onClose(),
  } as unknown as Parameters<typeof postgres>[1]);
  listener = createVersionListener({ query: (text) => listening.unsafe(text), origin });
  await listener.start();
  attachDatabaseState(db, createDatabaseState(undefined, { listener, own }));
  return {
    db: db as unknown as Db,
    driver: 'postgres',
    localWrites: undefined,
    close: async () => {
      listener.stop();
      await Promise.all([listening.end({ timeout: 5 }), client.end({ timeout: 5 })]);
    },
  };
}

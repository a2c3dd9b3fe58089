import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { migrateCompatibly } from './schema-compat.ts';
import { sql } from 'drizzle-orm';
import type { Sql } from 'postgres';
import * as schema from '../desired/schema/index.ts';
import { attachDatabaseState, createDatabaseState } from './database-state.ts';
import { countLocalWrites, learnReach, REACH_QUERIES, type ForeignKey } from './local-writes.ts';
import { parsePostgresUrl } from './postgres-url.ts';
import { pipelineBegin, type ReservingClient } from './pipelined-begin.ts';
import { hookPostgresClient, type PostgresJsClient } from './postgres-client-hooks.ts';
import { createTieredClient, type TierClient } from './tiered-client.ts';
import { createVersionListener, type VersionListener } from './data-version-listener.ts';
import { installQueryParsers, type ParserClient } from './pglite-parsers.ts';
import type { PreparedClient } from './pglite-prepared.ts';
import type { Database, Db } from './types.ts';
import { inPackage } from '../util/package-root.ts';

export const migrationsFolder = inPackage('drizzle');

/** Shared buffers of the embedded database (see openPglite). */
const PGLITE_SHARED_BUFFERS = '16MB';

/**
 * How long (s) an overflow connection of a PostgreSQL pool may stay idle before it closes (tiered-client.ts):
 * a burst's connections (up to twice the pool size on DATABASE_URL, with Database.relaxed's) and their
 * backends are gone 5 s after it, and the next burst pays a connect per connection again.
 */
const OVERFLOW_IDLE_TIMEOUT_S = 5;

/** An arbitrary constant: the advisory lock that serializes migrations between cluster members. */
const MIGRATION_LOCK = 7_715_104_211;

/**
 * The embedded database has one writer, this process, which counts its own writes (local-writes.ts,
 * readDataVersion): the data-version triggers' notifications serve a server shared by several hosts
 * (data-version-listener.ts). On PGlite and on the private server (soleWriter) they would only cost a
 * notification per write statement, so they are switched off there (each open, in case a later migration
 * adds one).
 */
const DATA_VERSION_TRIGGERS_OFF = dataVersionTriggers('DISABLE');
/** A server that may be shared (DATABASE_URL) needs them: on again if an earlier sole-writer open switched them off. */
const DATA_VERSION_TRIGGERS_ON = dataVersionTriggers('ENABLE');

function dataVersionTriggers(how: 'ENABLE' | 'DISABLE'): string {
  return `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT t.tgrelid::regclass AS tbl, t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
           WHERE p.proname = 'bump_data_version' AND NOT t.tgisinternal AND t.tgenabled ${how === 'DISABLE' ? "<> 'D'" : "= 'D'"} LOOP
    EXECUTE format('ALTER TABLE %s ${how} TRIGGER %I', r.tbl, r.tgname);
  END LOOP;
END $$`;
}

/**
 * Open the store: PGlite in `<stateDir>/database` unless `databaseUrl` names a PostgreSQL server.
 * Applies drizzle-kit migrations before returning.
 */
export async function openDatabase(opts: {
  stateDir: string;
  databaseUrl?: string | undefined;
  poolMax?: number;
  idleTimeoutS?: number;
  /**
   * The server at `databaseUrl` is this process's alone (svcd's private server: a unix socket in a 0700
   * directory): like PGlite, it counts its own writes instead of listening for other writers' commits.
   */
  soleWriter?: boolean;
  /**
   * Each connection's stream, made by the caller instead of a TCP or unix socket (a cluster member's tunnel
   * to the serving member's private server: cluster/database-tunnel.ts); the URL then names only the role,
   * password and database.
   */
  connect?: () => Promise<Duplex>;
}): Promise<Database> {
  if (opts.databaseUrl)
    return openPostgres(
      opts.databaseUrl,
      opts.poolMax ?? 10,
      opts.idleTimeoutS,
      opts.soleWriter ?? false,
      opts.connect,
    );
  return openPglite(path.join(opts.stateDir, 'database'));
}

async function openPglite(dir: string): Promise<Database> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  // With PGlite's module (its parser): loaded only when PGlite is the engine.
  const { installPreparedStatements } = await import('./pglite-prepared.ts');
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
    // An older svcd on a newer database refuses here, before anything is changed (schema-compat.ts).
    await migrateCompatibly(
      async (text) => (await client.query<Record<string, unknown>>(text)).rows,
      migrationsFolder,
      () => migrate(db, { migrationsFolder }),
    );
    await client.exec(DATA_VERSION_TRIGGERS_OFF);
    const keys = (await client.query<ForeignKey>(REACH_QUERIES.keys)).rows;
    const triggers = (await client.query<{ table: string; fn: string }>(REACH_QUERIES.triggers)).rows;
    learnReach(writes, keys, triggers);
  } catch (e) {
    await client.close().catch(() => {});
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    db: db as unknown as Db,
    relaxed: db as unknown as Db,
    driver: 'pglite',
    localWrites: writes,
    // Once: a second close (a shutdown path after a failed restart) is the first one's outcome.
    close: () => (closing ??= client.close()),
  };
}

async function openPostgres(
  url: string,
  poolMax: number,
  idleTimeoutS: number | undefined,
  soleWriter: boolean,
  connect?: () => Promise<Duplex>,
): Promise<Database> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  // Migrations run on a single-connection client holding a session advisory lock, so that several
  // hosts starting at once against the same server do not race.
  const target = parsePostgresUrl(url);
  const socket = connect ? { socket: connect } : target.host ? { host: target.host } : {};
  const migrator = postgres(target.url, { max: 1, onnotice: () => {}, connect_timeout: 10, ...socket });
  try {
    await migrator`select pg_advisory_lock(${MIGRATION_LOCK})`;
    // A member whose svcd is too old for the database's schema refuses here, changing nothing (schema-compat.ts).
    await migrateCompatibly(
      async (text) => [...(await migrator.unsafe(text))] as Record<string, unknown>[],
      migrationsFolder,
      () => migrate(drizzle(migrator, { schema }), { migrationsFolder }),
    );
    await migrator.unsafe(soleWriter ? DATA_VERSION_TRIGGERS_OFF : DATA_VERSION_TRIGGERS_ON);
    await migrator`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await migrator.end({ timeout: 5 });
  }
  // Its own writes' notifications name it (data-version-listener.ts): a name no other process has.
  const origin = `svcd ${randomUUID()}`;
  // Single-connection clients tried in order (tiered-client.ts): sequential work keeps to the first, warm
  // connection; the k-th exists only while k things overlap, and closes once idle.
  const tieredClient = (settings: Record<string, string> = {}) => {
    const common = {
      onnotice: () => {},
      connect_timeout: 10,
      connection: { application_name: origin, ...settings },
      ...socket,
      max: 1,
    };
    const tiers = Array.from({ length: Math.max(1, poolMax) }, (_, i) =>
      postgres(target.url, i === 0 ? common : { ...common, idle_timeout: idleTimeoutS ?? OVERFLOW_IDLE_TIMEOUT_S }),
    );
    // BEGIN goes out with the transaction's first statement (pipelined-begin.ts).
    for (const c of tiers) pipelineBegin(c as unknown as ReservingClient);
    return createTieredClient(tiers as unknown as TierClient[]);
  };
  const client = tieredClient();
  // Every statement prepared, and this process's own writes counted (what each table's writes reach: as on PGlite).
  const own = hookPostgresClient(client as unknown as PostgresJsClient);
  const db = drizzle(client as unknown as Sql, { schema });
  await db.execute(sql`select 1`);
  const rows = async <T>(text: string) => (await client.unsafe(text)) as T[];
  learnReach(
    own,
    await rows<ForeignKey>(REACH_QUERIES.keys),
    await rows<{ table: string; fn: string }>(REACH_QUERIES.triggers),
  );
  if (soleWriter) {
    // Nobody else writes: its own count of writes is every data version, as on PGlite (no LISTEN connection).
    attachDatabaseState(db, createDatabaseState(own));
    // Its server commits without waiting for the WAL flush (private-postgres-args.ts): `relaxed` is `db`.
    return {
      db: db as unknown as Db,
      relaxed: db as unknown as Db,
      driver: 'postgres',
      localWrites: own,
      close: () => client.end({ timeout: 5 }),
    };
  }
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
  const state = createDatabaseState(undefined, { listener, own });
  attachDatabaseState(db, state);
  // What svcd records of the host (Database.relaxed) goes through tiers of its own whose commits do not wait
  // for their WAL flush; their writes count as this process's own, like the others'. Measured with
  // bench/compare.sh (docs/database.md, "PostgreSQL: as fast as the embedded database"): create, stop and delete on
  // PostgreSQL were 1.33-1.49x PGlite's, as each flushed commit after a rootfs copy waited for the disk to
  // write that copy too.
  const relaxedClient = tieredClient({ synchronous_commit: 'off' });
  hookPostgresClient(relaxedClient as unknown as PostgresJsClient, own);
  const relaxed = drizzle(relaxedClient as unknown as Sql, { schema });
  attachDatabaseState(relaxed, state);
  state.relaxed = relaxed;
  return {
    db: db as unknown as Db,
    relaxed: relaxed as unknown as Db,
    driver: 'postgres',
    localWrites: undefined,
    close: async () => {
      listener.stop();
      await Promise.all([listening.end({ timeout: 5 }), client.end({ timeout: 5 }), relaxedClient.end({ timeout: 5 })]);
    },
  };
}

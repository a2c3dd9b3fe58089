import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type * as schema from '../desired/schema/index.ts';
import type { WriteCounter } from './local-writes.ts';

export type Schema = typeof schema;
/** The drizzle database, whichever driver (PGlite or postgres.js) is underneath. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: store functions accept both. */
export type DbOrTx = Db | Tx;

export interface Database {
  db: Db;
  /**
   * The same database, for what svcd records of the host (reconcilers, observers, the operations they
   * settle): on a PostgreSQL server of its own (`DATABASE_URL`), through connections whose commits do not
   * wait for their WAL flush (`synchronous_commit = off`). svcd learns all of it again from the host after a
   * crash, as it must anyway: the host's own changes (a copied rootfs, a started container) are not flushed
   * either. Desired state, what users asked for, goes through `db`, committed as durably as the server is
   * set to. On the embedded engines, whose commits never wait for a flush, it is `db`.
   */
  relaxed: Db;
  driver: 'pglite' | 'postgres';
  /**
   * This process's count of its writes when it is the database's only writer (PGlite): "has this
   * table been written since?" needs no query. Undefined when others may write (PostgreSQL). The
   * handle `db` carries it too, with the rest of what the database remembers (database-state.ts).
   */
  localWrites: WriteCounter | undefined;
  close(): Promise<void>;
}

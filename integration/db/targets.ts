import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openDatabase } from '../../src/db/open-database.ts';
import type { Database } from '../../src/db/types.ts';
import { createTestDatabase } from '../support/postgres.ts';

/** A new database nobody opened yet: raw SQL on it, then openDatabase() (migrations) on it. */
export interface UnopenedDatabase {
  /** Run SQL without migrating (to plant what a migration will trip over). */
  exec(statements: string): Promise<void>;
  /** openDatabase() on it; every handle is closed by the target's cleanup(). */
  open(): Promise<Database>;
}

/** One freshly migrated database of one driver, as the store suite uses it. */
export interface StoreTarget {
  /** The open handle (replaced by reopen()). */
  readonly database: Database;
  /** Close the handle, then open the same database again: migrations run a second time. */
  reopen(): Promise<Database>;
  /** Another database of the same driver, created empty. */
  unopened(): Promise<UnopenedDatabase>;
  /** Whether one process may hold several handles on one database at once (not PGlite). */
  readonly concurrentHandles: boolean;
  /** Close every handle and remove every database. */
  cleanup(): Promise<void>;
}

export type OpenTarget = () => Promise<StoreTarget>;

/** Handles and removals to run at cleanup, whatever happened before. */
function resources() {
  const handles = new Set<Database>();
  const removals: Array<() => Promise<void>> = [];
  return {
    handles,
    removals,
    async cleanup() {
      const errors: unknown[] = [];
      for (const h of handles) await h.close().catch((e: unknown) => errors.push(e));
      handles.clear();
      for (const remove of removals.splice(0)) await remove().catch((e: unknown) => errors.push(e));
      if (errors.length) throw new AggregateError(errors, 'cleaning up the test databases failed');
    },
  };
}

/** PGlite in fresh temporary state directories. */
export const openPgliteTarget: OpenTarget = async () => {
  const res = resources();
  const stateDir = async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svcd-db-'));
    res.removals.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };
  const open = async (dir: string) => {
    const d = await openDatabase({ stateDir: dir });
    res.handles.add(d);
    return d;
  };
  const dir = await stateDir();
  let current: Database;
  try {
    current = await open(dir);
  } catch (e) {
    await res.cleanup();
    throw e;
  }
  return {
    get database() {
      return current;
    },
    async reopen() {
      res.handles.delete(current);
      await current.close();
      current = await open(dir);
      return current;
    },
    async unopened() {
      const d = await stateDir();
      return {
        async exec(statements) {
          const { PGlite } = await import('@electric-sql/pglite');
          await mkdir(path.join(d, 'database'), { recursive: true });
          const client = await PGlite.create(path.join(d, 'database'));
          try {
            await client.exec(statements);
          } finally {
            await client.close();
          }
        },
        open: () => open(d),
      };
    },
    concurrentHandles: false,
    cleanup: () => res.cleanup(),
  };
};

/** Throw-away databases on the local PostgreSQL 15 (SVCD_TEST_PG_URL). */
export const openPostgresTarget: OpenTarget = async () => {
  const res = resources();
  const fresh = async () => {
    const t = await createTestDatabase();
    res.removals.push(() => t.drop());
    return t.url;
  };
  const open = async (databaseUrl: string) => {
    const d = await openDatabase({ stateDir: '', databaseUrl });
    res.handles.add(d);
    return d;
  };
  let url: string;
  let current: Database;
  try {
    url = await fresh();
    current = await open(url);
  } catch (e) {
    await res.cleanup();
    throw e;
  }
  return {
    get database() {
      return current;
    },
    async reopen() {
      res.handles.delete(current);
      await current.close();
      current = await open(url);
      return current;
    },
    async unopened() {
      const u = await fresh();
      return {
        async exec(statements) {
          const client = postgres(u, { max: 1, onnotice: () => {} });
          try {
            await client.unsafe(statements);
          } finally {
            await client.end();
          }
        },
        open: () => open(u),
      };
    },
    concurrentHandles: true,
    cleanup: () => res.cleanup(),
  };
};

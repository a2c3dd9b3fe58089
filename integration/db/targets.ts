import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/db/open-database.ts';
import type { Database } from '../../src/db/types.ts';
import { createTestDatabase } from '../support/postgres.ts';

/** One freshly migrated database of one driver, as the store suite uses it. */
export interface StoreTarget {
  /** The open handle (replaced by reopen()). */
  readonly database: Database;
  /** Close the handle, then open the same database again: migrations run a second time. */
  reopen(): Promise<Database>;
  /**
   * Open `n` handles at once on a new, empty database (migrations racing each other).
   * Absent where one process cannot hold two handles on one database (PGlite).
   */
  openConcurrently?: (n: number) => Promise<Database[]>;
  /** Close every handle and remove the database. */
  cleanup(): Promise<void>;
}

export type OpenTarget = () => Promise<StoreTarget>;

/** PGlite in a fresh temporary state directory. */
export const openPgliteTarget: OpenTarget = async () => {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svcd-db-'));
  let current: Database | undefined;
  const close = async () => {
    const d = current;
    current = undefined;
    await d?.close();
  };
  try {
    current = await openDatabase({ stateDir });
  } catch (e) {
    await rm(stateDir, { recursive: true, force: true });
    throw e;
  }
  return {
    get database() {
      if (!current) throw new Error('the PGlite database is closed');
      return current;
    },
    async reopen() {
      await close();
      current = await openDatabase({ stateDir });
      return current;
    },
    async cleanup() {
      try {
        await close();
      } finally {
        await rm(stateDir, { recursive: true, force: true });
      }
    },
  };
};

/** A throw-away database on the local PostgreSQL 15 (SVCD_TEST_PG_URL). */
export const openPostgresTarget: OpenTarget = async () => {
  const drops: Array<() => Promise<void>> = [];
  const handles = new Set<Database>();
  const fresh = async () => {
    const t = await createTestDatabase();
    drops.push(() => t.drop());
    return t.url;
  };
  const open = async (databaseUrl: string) => {
    const d = await openDatabase({ stateDir: '', databaseUrl });
    handles.add(d);
    return d;
  };
  const cleanup = async () => {
    const errors: unknown[] = [];
    for (const h of handles) await h.close().catch((e: unknown) => errors.push(e));
    handles.clear();
    for (const drop of drops.splice(0)) await drop().catch((e: unknown) => errors.push(e));
    if (errors.length) throw new AggregateError(errors, 'cleaning up the PostgreSQL test databases failed');
  };

  const url = await fresh();
  let current: Database;
  try {
    current = await open(url);
  } catch (e) {
    await cleanup();
    throw e;
  }
  return {
    get database() {
      return current;
    },
    async reopen() {
      handles.delete(current);
      await current.close();
      current = await open(url);
      return current;
    },
    async openConcurrently(n) {
      const u = await fresh();
      return Promise.all(Array.from({ length: n }, () => open(u)));
    },
    cleanup,
  };
};

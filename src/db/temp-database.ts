import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { openDatabase } from './open-database.ts';
import type { Database, Db } from './types.ts';

/**
 * Test support: an embedded (PGlite) database in a temporary directory for a test file, opened (and
 * `setup` run on it) before its tests, closed and removed after them.
 */
export function useTempDatabase(prefix: string, setup?: (db: Db) => Promise<unknown>): { readonly database: Database } {
  let dir: string | undefined;
  let database: Database | undefined;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), prefix));
    database = await openDatabase({ stateDir: dir });
    await setup?.(database.db);
  });
  after(async () => {
    await database?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return {
    get database() {
      if (!database) throw new Error('the temporary database is open only while the tests run');
      return database;
    },
  };
}

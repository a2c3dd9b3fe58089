import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import * as schema from '../../src/desired/schema/index.ts';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { migrationsFolder } from '../../src/db/open-database.ts';
import type { WriteCounter } from '../../src/db/local-writes.ts';
import { createOwnVacuum } from '../../src/db/own-vacuum.ts';
import type { Db } from '../../src/db/types.ts';
import { DEFAULT_PROJECT, ensureDefaultProject, updateProject } from '../../src/desired/projects.ts';
import { profiles, projects } from '../../src/desired/schema/index.ts';
import { query, type SuiteContext } from './helpers.ts';
import { defineDesiredTests } from './suite-desired.ts';
import { defineOperationStoreTests } from './suite-operations.ts';
import { defineServerTests } from './suite-server.ts';
import type { OpenTarget, StoreTarget } from './targets.ts';

const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as {
  entries: { tag: string; when: number }[];
};
/** What drizzle records per applied migration: the SQL file's sha256 and the journal's `when`. */
const expectedMigrations = journal.entries.map((e) => ({
  hash: createHash('sha256')
    .update(readFileSync(path.join(migrationsFolder, `${e.tag}.sql`), 'utf8'))
    .digest('hex'),
  createdAt: e.when,
}));
/** Every table the drizzle schema declares: the migrations must create exactly these. */
const TABLES = (Object.values(schema) as unknown[])
  .filter((t): t is PgTable => is(t, PgTable))
  .map((t) => getTableConfig(t).name)
  .sort();

async function appliedMigrations(db: Db) {
  const rows = await query<{ hash: string; created_at: string | number | bigint }>(
    db,
    sql`select hash, created_at from drizzle.__drizzle_migrations order by id`,
  );
  return rows.map((r) => ({ hash: r.hash, createdAt: Number(r.created_at) }));
}

async function publicTables(db: Db): Promise<string[]> {
  const rows = await query<{ table_name: string }>(
    db,
    sql`select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
  );
  return rows.map((r) => r.table_name);
}

/** Run `fn` on a database of its own, always cleaned up. */
async function withFresh(open: OpenTarget, fn: (t: StoreTarget) => Promise<void>): Promise<void> {
  const t = await open();
  try {
    await fn(t);
  } finally {
    await t.cleanup();
  }
}

/** The database suite, run once per driver. */
export function defineStoreSuite(name: string, open: OpenTarget): void {
  describe(name, () => {
    let shared: StoreTarget | undefined;
    const ctx: SuiteContext = {
      db: () => {
        assert.ok(shared, 'the shared database is open');
        return shared.database.db;
      },
      open,
    };
    before(async () => {
      shared = await open();
      await ensureDefaultProject(shared.database.db);
    });
    after(async () => {
      await shared?.cleanup();
    });

    describe('migrations', () => {
      test('apply on an empty database; opening it again re-runs them as a no-op', async () => {
        await withFresh(open, async (t) => {
          const db = t.database.db;
          assert.deepEqual(await publicTables(db), TABLES);
          assert.deepEqual(await appliedMigrations(db), expectedMigrations);
          assert.deepEqual(await db.select().from(projects), [], 'migrations create no rows');
          await db.insert(projects).values({ name: 'marker', description: 'survives a re-open' });

          const again = (await t.reopen()).db;
          assert.deepEqual(await appliedMigrations(again), expectedMigrations, 'nothing applied twice');
          assert.deepEqual(await publicTables(again), TABLES);
          const rows = await again.select({ name: projects.name, description: projects.description }).from(projects);
          assert.deepEqual(rows, [{ name: 'marker', description: 'survives a re-open' }]);
        });
      });

      test('two openDatabase calls at once on one fresh database both succeed (advisory lock)', async (t) => {
        await withFresh(open, async (target) => {
          if (!target.concurrentHandles) {
            t.skip(`${target.database.driver}: one process holds one handle per data directory`);
            return;
          }
          const empty = await target.unopened();
          const handles = await Promise.all([empty.open(), empty.open(), empty.open()]);
          for (const h of handles) {
            assert.deepEqual(await appliedMigrations(h.db), expectedMigrations);
            assert.deepEqual(await publicTables(h.db), TABLES);
          }
          // The handles talk to the same, usable database.
          await handles[0]!.db.insert(projects).values({ name: 'seen-by-all' });
          for (const h of handles)
            assert.deepEqual(await h.db.select({ name: projects.name }).from(projects), [{ name: 'seen-by-all' }]);
        });
      });

      test('a failed migration is rolled back and leaves no lock behind: once fixed, opening succeeds', async () => {
        await withFresh(open, async (target) => {
          const empty = await target.unopened();
          await empty.exec('create table reconcile_status (planted int)');
          await assert.rejects(empty.open(), 'the migration trips over the planted table');
          await empty.exec('drop table reconcile_status');
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error('openDatabase hung: the migration lock was never released')),
              20_000,
            );
          });
          try {
            const db = (await Promise.race([empty.open(), timeout])).db;
            assert.deepEqual(await appliedMigrations(db), expectedMigrations);
            assert.deepEqual(await publicTables(db), TABLES);
          } finally {
            clearTimeout(timer);
          }
        });
      });
    });

    describe('transactions', () => {
      // A callback may end with its last statements in flight: COMMIT goes out behind them (one round trip
      // less on a server, pipelined-begin.ts; PGlite waits for them, pglite-prepared.ts).
      test('a last statement left in flight is committed with the transaction, and its result is there', async () => {
        const db = ctx.db();
        const { last } = await db.transaction(async (tx) => {
          await tx.insert(projects).values({ name: 'inflight-a' });
          const last = tx
            .insert(projects)
            .values({ name: 'inflight-b', description: 'last' })
            .returning({ name: projects.name });
          const started = Promise.resolve(last);
          started.catch(() => {});
          return { last: started };
        });
        assert.deepEqual(await last, [{ name: 'inflight-b' }]);
        const rows = await db
          .select({ name: projects.name })
          .from(projects)
          .where(sql`${projects.name} like 'inflight-%'`);
        assert.deepEqual(rows.map((r) => r.name).sort(), ['inflight-a', 'inflight-b']);
      });

      test('a last statement left in flight that fails rolls the whole transaction back, with its error', async () => {
        const db = ctx.db();
        await db.insert(projects).values({ name: 'inflight-taken' });
        let last: Promise<unknown> | undefined;
        await assert.rejects(
          db.transaction(async (tx) => {
            await tx.insert(projects).values({ name: 'inflight-c' });
            last = Promise.resolve(tx.insert(projects).values({ name: 'inflight-taken' }));
            last.catch(() => {});
            return { last };
          }),
          (e: Error & { cause?: { message?: string } }) =>
            /duplicate key/.test(`${e.message} ${e.cause?.message ?? ''}`),
        );
        await assert.rejects(last!, 'the statement itself failed');
        const rows = await db.select({ name: projects.name }).from(projects).where(eq(projects.name, 'inflight-c'));
        assert.deepEqual(rows, [], 'the statement before it was rolled back');
      });
    });

    describe('own vacuum', () => {
      test('a churned table is vacuumed once svcd wrote; with no write since, not even the statistics are read', async () => {
        const db = ctx.db();
        const counter: WriteCounter = { tables: new Map(), any: 0, reach: undefined };
        let asked = 0;
        const counting = new Proxy(db, {
          get(target, key) {
            if (key === 'execute') return (...a: Parameters<Db['execute']>) => (asked++, target.execute(...a));
            const v = Reflect.get(target, key) as unknown;
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          },
        });
        const vacuum = createOwnVacuum({ db: counting, localWrites: counter });
        await db.insert(projects).values(Array.from({ length: 300 }, (_, i) => ({ name: `vac-${i}` })));
        await db.delete(projects).where(sql`${projects.name} like 'vac-%'`);
        // the backend's counts reach the shared statistics when it next goes idle
        await db.execute(sql`select pg_stat_force_next_flush()`);
        await db.execute(sql`select 1`);
        counter.any++;
        const first = await vacuum.run();
        assert.ok(first.vacuumed.includes('projects'), JSON.stringify(first));
        const [st] = await query<{ dead: number | string; vacuumed: boolean }>(
          db,
          sql`select n_dead_tup as dead, last_vacuum is not null as vacuumed from pg_stat_user_tables where relname = 'projects'`,
        );
        assert.equal(Number(st!.dead), 0);
        assert.equal(st!.vacuumed, true);
        asked = 0;
        assert.deepEqual(await vacuum.run(), { vacuumed: [], analyzed: [] });
        assert.equal(asked, 0, 'nothing written since the last look: no query');
        counter.tables.set('projects', 1);
        await vacuum.run();
        assert.equal(asked, 1, 'a write since: one read of the statistics, nothing over the thresholds');
      });
    });

    describe('default project', () => {
      test('ensureDefaultProject creates the default project and profile once and is idempotent', async () => {
        await withFresh(open, async (t) => {
          const db = t.database.db;
          await ensureDefaultProject(db);
          await Promise.all([ensureDefaultProject(db), ensureDefaultProject(db)]);
          const projectRows = await db.select().from(projects);
          assert.equal(projectRows.length, 1);
          assert.equal(projectRows[0]!.name, DEFAULT_PROJECT);
          assert.equal(projectRows[0]!.generation, 1);
          assert.deepEqual(projectRows[0]!.config, { 'features.images': 'true', 'features.profiles': 'true' });
          const profileRows = await db.select().from(profiles);
          assert.deepEqual(
            profileRows.map((p) => [p.project, p.name, p.generation]),
            [[DEFAULT_PROJECT, 'default', 1]],
          );

          // A later start must not overwrite what the user changed.
          await updateProject(db, DEFAULT_PROJECT, { description: 'mine', config: projectRows[0]!.config });
          await db.update(profiles).set({ description: 'my profile' }).where(eq(profiles.project, DEFAULT_PROJECT));
          await ensureDefaultProject(db);
          const [p] = await db.select().from(projects).where(eq(projects.name, DEFAULT_PROJECT));
          assert.equal(p!.description, 'mine');
          assert.equal(p!.generation, 2);
          const [prof] = await db
            .select()
            .from(profiles)
            .where(and(eq(profiles.project, DEFAULT_PROJECT), eq(profiles.name, 'default')));
          assert.equal(prof!.description, 'my profile');
          assert.equal((await db.select().from(profiles)).length, 1);
        });
      });
    });

    describe('projects, profiles and the desired-write pattern', () => defineDesiredTests(ctx));
    describe('operation store', () => defineOperationStoreTests(ctx));
    describe('server config and certificates', () => defineServerTests(ctx));
  });
}

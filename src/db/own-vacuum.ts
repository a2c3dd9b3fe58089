/**
 * svcd's own vacuum, for the embedded databases (PGlite, and the private PostgreSQL server), where svcd
 * is the only writer.
 *
 * PGlite runs no autovacuum at all (one process, no launcher). The private server could, but its launcher
 * is one more process that stays up for a database of a few MiB (9 MiB of the tree's RSS, measured): the
 * server runs with `autovacuum = off` (private-postgres-args.ts), and svcd does the launcher's job. Once a
 * minute, if svcd wrote anything since the last look (its own write counter: no query otherwise), one read
 * of pg_stat_user_tables decides, with autovacuum's default formulas, which tables get a VACUUM (ANALYZE)
 * or only an ANALYZE. PostgreSQL still starts its anti-wraparound vacuum by itself when a table's oldest
 * transaction id gets too old (autovacuum_freeze_max_age), whatever `autovacuum` says.
 */
import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { PollObserver } from '../observers/types.ts';
import type { WriteCounter } from './local-writes.ts';
import type { Db } from './types.ts';

/** autovacuum's defaults: base threshold and scale factor of live rows. */
const VACUUM_THRESHOLD = { base: 50, scale: 0.2 };
const INSERT_VACUUM_THRESHOLD = { base: 1000, scale: 0.2 };
const ANALYZE_THRESHOLD = { base: 50, scale: 0.1 };

export interface TableStats {
  table: string;
  live: number;
  dead: number;
  modifiedSinceAnalyze: number;
  insertedSinceVacuum: number;
}

/** What a table needs now, by autovacuum's formulas. */
export function vacuumNeed(s: TableStats): 'vacuum' | 'analyze' | undefined {
  const over = (n: number, t: { base: number; scale: number }) => n > t.base + t.scale * s.live;
  if (over(s.dead, VACUUM_THRESHOLD) || over(s.insertedSinceVacuum, INSERT_VACUUM_THRESHOLD)) return 'vacuum';
  if (over(s.modifiedSinceAnalyze, ANALYZE_THRESHOLD)) return 'analyze';
  return undefined;
}

/** A number that changes whenever this process finished a write (the counters only grow). */
const writesSoFar = (c: WriteCounter): number => {
  let n = c.any;
  for (const v of c.tables.values()) n += v;
  return n;
};

/** A table name as an identifier (pg_stat_user_tables names only real tables; quoted all the same). */
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export function createOwnVacuum(deps: { db: Db; localWrites: WriteCounter; log?: Logger; intervalMs?: number }) {
  let seen = -1;
  /** One look: the tables vacuumed or analyzed, by what they got. */
  async function run(): Promise<{ vacuumed: string[]; analyzed: string[] }> {
    const done = { vacuumed: [] as string[], analyzed: [] as string[] };
    const now = writesSoFar(deps.localWrites);
    if (now === seen) return done;
    seen = now;
    const rows = (await deps.db.execute(
      sql`select relname as "table", n_live_tup as live, n_dead_tup as dead, n_mod_since_analyze as "modifiedSinceAnalyze", n_ins_since_vacuum as "insertedSinceVacuum"
          from pg_stat_user_tables where schemaname = 'public'`,
    )) as unknown as { rows?: Record<string, unknown>[] } | Record<string, unknown>[];
    const list = Array.isArray(rows) ? rows : (rows.rows ?? []);
    for (const r of list) {
      const s: TableStats = {
        table: String(r.table),
        live: Number(r.live),
        dead: Number(r.dead),
        modifiedSinceAnalyze: Number(r.modifiedSinceAnalyze),
        insertedSinceVacuum: Number(r.insertedSinceVacuum),
      };
      const need = vacuumNeed(s);
      if (!need) continue;
      await deps.db.execute(
        sql.raw(need === 'vacuum' ? `vacuum (analyze) ${ident(s.table)}` : `analyze ${ident(s.table)}`),
      );
      (need === 'vacuum' ? done.vacuumed : done.analyzed).push(s.table);
    }
    if (done.vacuumed.length || done.analyzed.length) deps.log?.debug(done, 'vacuumed');
    return done;
  }
  const observer: PollObserver = {
    name: 'vacuum',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 60_000,
    async sample() {
      await run();
    },
  };
  return { run, observer };
}

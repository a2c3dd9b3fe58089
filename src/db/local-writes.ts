/**
 * Writes made through an embedded database (PGlite), counted: svcd's own process is its only
 * client, so a read that depends on "has anything been written since?" (data_versions) can be
 * answered without asking when the count has not moved. A database with other clients (a
 * PostgreSQL server, possibly shared by a cluster) is never registered, and is always asked.
 */
export interface WriteCounter {
  /**
   * Bumped once a statement that may write has finished (a transaction: once it has ended), except
   * for writes that only touch ISOLATED_TABLES: those cannot change anything a version guards.
   */
  count: number;
}

const counters = new WeakMap<object, WriteCounter>();

/** The counter of a database whose every writer is this process, if `db` is one. */
export const localWrites = (db: object): WriteCounter | undefined => counters.get(db);

/**
 * Tables that no trigger and no foreign key ties to another table (asserted against the migrated
 * schema by a test): a write to one of them changes that table only. Operation rows and reconcile
 * statuses are written on every exec and reconcile, and must not make every cache read again.
 */
export const ISOLATED_TABLES: ReadonlySet<string> = new Set(['operations', 'reconcile_status']);

/** Only reads: a plain SELECT or SHOW (a WITH may hide a data-modifying statement). */
const READ_ONLY = /^\s*(select|show)\b/i;
/** A single INSERT, UPDATE or DELETE and the table it writes (drizzle quotes names). */
const WRITE_TARGET = /^\s*(?:insert\s+into|update|delete\s+from)\s+"([a-z_][a-z0-9_]*)"\s/i;

/** What a statement may do: nothing (a read), write only an isolated table, or anything. */
function kindOf(sql: string): 'read' | 'isolated' | 'write' {
  if (READ_ONLY.test(sql)) return 'read';
  const target = WRITE_TARGET.exec(sql)?.[1];
  // One statement only: a `;` anywhere (even in a literal) counts as anything.
  return target !== undefined && ISOLATED_TABLES.has(target) && !sql.includes(';') ? 'isolated' : 'write';
}

interface QueryClient {
  query(sql: string, ...rest: unknown[]): Promise<unknown>;
  exec(sql: string, ...rest: unknown[]): Promise<unknown>;
  transaction<T>(fn: (tx: never) => Promise<T>): Promise<T>;
}

/**
 * Count the writes through `client` (a PGlite instance) and register the counter for `db`, the
 * drizzle database over it. A statement that may write bumps it after it finished; a transaction
 * bumps it when it ends, unless all it ran were reads and writes of isolated tables.
 */
export function countLocalWrites(db: object, client: QueryClient): WriteCounter {
  const counter: WriteCounter = { count: 0 };
  const bumpAfter = <T>(p: Promise<T>): Promise<T> => {
    const bump = () => void counter.count++;
    p.then(bump, bump);
    return p;
  };
  const query = client.query.bind(client);
  const exec = client.exec.bind(client);
  const transaction = client.transaction.bind(client);
  // exec may run several statements: only a read-only start with no `;` is left uncounted.
  client.query = (sql, ...rest) => (kindOf(sql) === 'write' ? bumpAfter(query(sql, ...rest)) : query(sql, ...rest));
  client.exec = (sql, ...rest) => (kindOf(sql) === 'read' && !sql.trim().replace(/;$/, '').includes(';') ? exec(sql, ...rest) : bumpAfter(exec(sql, ...rest)));
  client.transaction = (fn) => {
    let wrote = false;
    const run = transaction((tx: never) => {
      const t = tx as Partial<Record<'query' | 'exec' | 'sql', (...a: never[]) => unknown>>;
      // Statements in the transaction are classified as they are sent (exec and sql: always writes).
      for (const m of ['query', 'exec', 'sql'] as const) {
        const orig = t[m];
        if (typeof orig !== 'function') continue;
        t[m] = ((sqlText: unknown, ...rest: never[]) => {
          if (m !== 'query' || typeof sqlText !== 'string' || kindOf(sqlText) === 'write') wrote = true;
          return orig(sqlText as never, ...rest);
        }) as never;
      }
      return fn(tx);
    });
    const bump = () => void (wrote && counter.count++);
    run.then(bump, bump);
    return run;
  };
  counters.set(db, counter);
  return counter;
}

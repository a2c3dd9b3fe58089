/**
 * Writes made through an embedded database (PGlite), counted per table: svcd's own process is its
 * only client, so "has this table been written since?" is answered without asking the database
 * (data-versions.ts, and caches of rarely written tables). A database with other clients (a
 * PostgreSQL server, possibly shared by a cluster) has none (Database.localWrites), and is always asked.
 *
 * A write of one table may change others: foreign keys that cascade (or set null/default) carry an
 * update or delete to the referencing tables, and a trigger may write anything. What each table's
 * writes reach is learnt from the migrated schema (learnReach); until then, and for any statement
 * whose table is not known, a write counts as a write of every table.
 */
export interface WriteCounter {
  /** Per table: bumped once a statement (a transaction: once it ended) that may have written it has finished. */
  readonly tables: Map<string, number>;
  /** Bumped for a write that may have touched any table. */
  any: number;
  /**
   * The tables an insert, update or delete of each table reaches (itself included); 'any' for a table
   * with a trigger that may write anywhere. A table not in the map reaches itself only.
   */
  reach: Map<string, Record<WriteKind, Reach>> | undefined;
}

type WriteKind = 'insert' | 'update' | 'delete';
type Reach = ReadonlySet<string> | 'any';

/** A version of `tables` that changes whenever a finished write may have changed one of them (this process only). */
export function localVersion(counter: WriteCounter, tables: readonly string[]): string {
  return `${counter.any}:${tables.map((t) => counter.tables.get(t) ?? 0).join(',')}`;
}

/**
 * Only reads: a plain SELECT or SHOW (a WITH may hide a data-modifying statement); VACUUM and ANALYZE
 * (own-vacuum.ts) change no row anyone reads.
 */
const READ_ONLY = /^\s*(select|show|vacuum|analyze)\b/i;
/** A single INSERT, UPDATE or DELETE and the table it writes (drizzle quotes names). */
const WRITE_TARGET = /^\s*(insert\s+into|update|delete\s+from)\s+"([a-z_][a-z0-9_]*)"\s/i;
/** An insert that may update existing rows instead (an upsert). */
const UPSERT = /\bon\s+conflict\b[\s\S]*\bdo\s+update\b/i;

/** A write's target: a table and what the statement does to it. */
export interface Target {
  table: string;
  kind: WriteKind;
}

/** What a statement may write: nothing, one known table, or anything. */
export function targetOf(sql: string): 'read' | 'any' | Target {
  if (READ_ONLY.test(sql)) return sql.trim().replace(/;$/, '').includes(';') ? 'any' : 'read';
  const m = WRITE_TARGET.exec(sql);
  // One statement only: a `;` anywhere (even in a literal) counts as anything.
  if (!m || sql.includes(';')) return 'any';
  const verb = m[1]!.toLowerCase();
  const kind: WriteKind = verb.startsWith('insert')
    ? UPSERT.test(sql)
      ? 'update'
      : 'insert'
    : verb === 'update'
      ? 'update'
      : 'delete';
  return { table: m[2]!, kind };
}

/** Record finished writes of `targets`. */
export function bump(counter: WriteCounter, targets: Iterable<'any' | Target>): void {
  for (const target of targets) {
    const reach: Reach =
      target === 'any' || !counter.reach
        ? 'any'
        : (counter.reach.get(target.table)?.[target.kind] ?? new Set([target.table]));
    if (reach === 'any') {
      counter.any++;
      return;
    }
    for (const t of reach) counter.tables.set(t, (counter.tables.get(t) ?? 0) + 1);
  }
}

interface QueryClient {
  query(sql: string, ...rest: unknown[]): Promise<unknown>;
  exec(sql: string, ...rest: unknown[]): Promise<unknown>;
  transaction<T>(fn: (tx: never) => Promise<T>): Promise<T>;
}

/**
 * Count the writes through `client` (a PGlite instance); openDatabase makes the counter the
 * database's `localWrites` (database-state.ts). A statement that may write counts after it finished; a transaction
 * counts what it wrote when it ends (committed or not: a needless count is harmless).
 */
export function countLocalWrites(client: QueryClient): WriteCounter {
  const counter: WriteCounter = { tables: new Map(), any: 0, reach: undefined };
  const after = <T>(p: Promise<T>, targets: Iterable<'any' | Target>): Promise<T> => {
    const done = () => bump(counter, targets);
    p.then(done, done);
    return p;
  };
  const query = client.query.bind(client);
  const exec = client.exec.bind(client);
  const transaction = client.transaction.bind(client);
  client.query = (sql, ...rest) => {
    const target = targetOf(sql);
    return target === 'read' ? query(sql, ...rest) : after(query(sql, ...rest), [target]);
  };
  // exec may run several statements: anything but a single read counts as a write of anything.
  client.exec = (sql, ...rest) => (targetOf(sql) === 'read' ? exec(sql, ...rest) : after(exec(sql, ...rest), ['any']));
  client.transaction = (fn) => {
    const written = new Set<'any' | Target>();
    const run = transaction((tx: never) => {
      const t = tx as Partial<Record<'query' | 'exec' | 'sql', (...a: never[]) => unknown>>;
      // Statements in the transaction are noted as they are sent (exec and sql: anything).
      for (const m of ['query', 'exec', 'sql'] as const) {
        const orig = t[m];
        if (typeof orig !== 'function') continue;
        t[m] = ((sqlText: unknown, ...rest: never[]) => {
          const target = m === 'query' && typeof sqlText === 'string' ? targetOf(sqlText) : 'any';
          if (target !== 'read') written.add(target);
          return orig(sqlText as never, ...rest);
        }) as never;
      }
      return fn(tx);
    });
    return after(run, written);
  };
  return counter;
}

/** A foreign key: `child` references `parent`; what an update or delete of the parent does to the child. */
export interface ForeignKey {
  child: string;
  parent: string;
  /** pg_constraint confupdtype / confdeltype: a no action, r restrict, c cascade, n set null, d set default. */
  onUpdate: string;
  onDelete: string;
}

/** Trigger functions known to write no table (migration 0011: they only notify). */
const VERSION_TRIGGERS = new Set(['bump_data_version']);

/**
 * Set what each table's writes reach, from the schema's foreign keys and triggers: an insert reaches
 * its table only; an update or delete also the tables whose keys act on it (cascade, set null, set
 * default), and from there whatever those reach by any modifying key. A table with a trigger other
 * than the data-version one reaches anything.
 */
export function learnReach(
  counter: WriteCounter,
  keys: readonly ForeignKey[],
  triggers: readonly { table: string; fn: string }[],
): void {
  const modifies = (action: string) => action === 'c' || action === 'n' || action === 'd';
  const edges = (kind: 'update' | 'delete' | 'both', table: string) =>
    keys
      .filter(
        (k) =>
          k.parent === table &&
          (kind === 'update'
            ? modifies(k.onUpdate)
            : kind === 'delete'
              ? modifies(k.onDelete)
              : modifies(k.onUpdate) || modifies(k.onDelete)),
      )
      .map((k) => k.child);
  const anywhere = new Set(triggers.filter((t) => !VERSION_TRIGGERS.has(t.fn)).map((t) => t.table));
  const closure = (table: string, kind: WriteKind): Reach => {
    const seen = new Set([table]);
    const todo = kind === 'insert' ? [] : edges(kind, table);
    while (todo.length) {
      const t = todo.pop()!;
      if (seen.has(t)) continue;
      seen.add(t);
      todo.push(...edges('both', t));
    }
    return [...seen].some((t) => anywhere.has(t)) ? 'any' : seen;
  };
  const reach = new Map<string, Record<WriteKind, Reach>>();
  for (const table of new Set([...keys.flatMap((k) => [k.child, k.parent]), ...triggers.map((t) => t.table)])) {
    reach.set(table, {
      insert: closure(table, 'insert'),
      update: closure(table, 'update'),
      delete: closure(table, 'delete'),
    });
  }
  counter.reach = reach;
}

/** The schema facts learnReach needs, as SQL (run on the migrated database). */
export const REACH_QUERIES = {
  keys: `select con.conrelid::regclass::text as child, con.confrelid::regclass::text as parent,
           con.confupdtype::text as "onUpdate", con.confdeltype::text as "onDelete"
         from pg_constraint con where con.contype = 'f'`,
  triggers: `select t.tgrelid::regclass::text as "table", p.proname::text as fn
             from pg_trigger t join pg_proc p on p.oid = t.tgfoid where not t.tgisinternal`,
} as const;

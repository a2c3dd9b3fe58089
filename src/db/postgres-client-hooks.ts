/**
 * Two hooks on a postgres.js client under drizzle, installed by openDatabase:
 *  - **Prepared statements.** drizzle asks postgres.js for a named prepared statement only for queries built
 *    with `.prepare(name)`, and passes `prepare: false` for every other one, so PostgreSQL parses and plans
 *    each text on every run. drizzle's texts recur (placeholders), so they are prepared here like postgres.js
 *    does by default: once per connection, then Bind/Execute only (postgres.js prepares again a statement
 *    the schema invalidated).
 *  - **This process's own writes, counted** (local-writes.ts): a cached read must see a write this process
 *    just committed, before PostgreSQL's notification of it (data-version-listener.ts) has come back. A
 *    statement counts once it succeeded; a transaction's statements once it committed (what failed or
 *    rolled back wrote nothing).
 */
import { bump, targetOf, type Target, type WriteCounter } from './local-writes.ts';
import { observeQuery } from './observe-query.ts';

/** What drizzle uses of a postgres.js client (`sql`), and of the client a transaction gets. */
export interface PostgresJsClient {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): PromiseLike<unknown>;
  begin(fn: (tx: PostgresJsClient) => unknown): Promise<unknown>;
  /** On a transaction's client: a nested transaction (drizzle's tx.transaction). */
  savepoint?(fn: (tx: PostgresJsClient) => unknown): Promise<unknown>;
}

type Note = (targets: Iterable<'any' | Target>) => void;

/** What postgres.js itself sends on a transaction's client around the statements (writes nothing). */
const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|savepoint|release)\b/i;

/** Wrap `client.unsafe` in place: always prepared, writes noted (after the query, when `note` says so). */
function hookUnsafe(
  client: PostgresJsClient,
  note: (target: 'any' | Target, query: PromiseLike<unknown>) => void,
): void {
  const unsafe = client.unsafe.bind(client);
  client.unsafe = (query, params, options) => {
    const q = unsafe(query, params, { ...options, prepare: true });
    const target = TRANSACTION_CONTROL.test(query) ? 'read' : targetOf(query);
    if (target !== 'read') note(target, q);
    return q;
  };
}

/**
 * Install both hooks on `sql`; returns the counter of this process's finished writes (`counter` when given:
 * several clients of one database count into one).
 */
export function hookPostgresClient(
  sql: PostgresJsClient,
  counter: WriteCounter = { tables: new Map(), any: 0, reach: undefined },
): WriteCounter {
  const note: Note = (targets) => bump(counter, targets);
  hookUnsafe(sql, (target, q) => observeQuery(q, { fulfilled: () => note([target]) }));
  const begin = sql.begin.bind(sql);
  sql.begin = (fn) => {
    const written = new Set<'any' | Target>();
    const hookTx = (tx: PostgresJsClient) => {
      hookUnsafe(tx, (target) => written.add(target));
      const savepoint = tx.savepoint?.bind(tx);
      if (savepoint) tx.savepoint = (inner) => savepoint((sp) => (hookTx(sp), inner(sp)));
    };
    const run = begin((tx) => {
      hookTx(tx);
      return fn(tx);
    });
    run.then(
      () => note(written),
      () => {},
    );
    return run;
  };
  return counter;
}

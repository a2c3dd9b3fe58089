/**
 * Writes made through an embedded database (PGlite), counted: svcd's own process is its only
 * client, so a read that depends on "has anything been written since?" (data_versions) can be
 * answered without asking when the count has not moved. A database with other clients (a
 * PostgreSQL server, possibly shared by a cluster) is never registered, and is always asked.
 */
export interface WriteCounter {
  /** Bumped once a statement that may write has finished (a transaction: once it has ended). */
  count: number;
}

const counters = new WeakMap<object, WriteCounter>();

/** The counter of a database whose every writer is this process, if `db` is one. */
export const localWrites = (db: object): WriteCounter | undefined => counters.get(db);

/** Only reads: a plain SELECT or SHOW (a WITH may hide a data-modifying statement). */
const READ_ONLY = /^\s*(select|show)\b/i;

interface QueryClient {
  query(sql: string, ...rest: unknown[]): Promise<unknown>;
  exec(sql: string, ...rest: unknown[]): Promise<unknown>;
  transaction<T>(fn: (tx: never) => Promise<T>): Promise<T>;
}

/**
 * Count the writes through `client` (a PGlite instance) and register the counter for `db`, the
 * drizzle database over it. Every statement that is not a plain read bumps it after it finished;
 * so does the end of every transaction.
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
  client.query = (sql, ...rest) => (READ_ONLY.test(sql) ? query(sql, ...rest) : bumpAfter(query(sql, ...rest)));
  client.exec = (sql, ...rest) => (READ_ONLY.test(sql) ? exec(sql, ...rest) : bumpAfter(exec(sql, ...rest)));
  client.transaction = (fn) => bumpAfter(transaction(fn));
  counters.set(db, counter);
  return counter;
}

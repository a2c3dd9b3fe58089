import type { Db } from '../db/types.ts';

/** What countQueries gives: the statements sent through the database handle since the last reset. */
export interface QueryCount {
  readonly count: number;
  reset(): void;
  /** Stop counting (the client's methods are put back). */
  restore(): void;
}

type Client = Record<'query' | 'exec' | 'transaction', (...args: unknown[]) => Promise<unknown>>;

/**
 * Test support: count the statements a PGlite-backed drizzle handle sends (each `query`, `exec` and
 * `transaction` of its client is one), so a test can assert how many queries a tick or a reconcile costs.
 */
export function countQueries(db: Db): QueryCount {
  const client = (db as unknown as { $client: Client }).$client;
  let count = 0;
  const originals = { query: client.query, exec: client.exec, transaction: client.transaction };
  for (const m of ['query', 'exec', 'transaction'] as const) {
    const orig = originals[m];
    client[m] = (...args: unknown[]) => {
      count++;
      return orig.apply(client, args);
    };
  }
  return {
    get count() {
      return count;
    },
    reset: () => void (count = 0),
    restore: () => void Object.assign(client, originals),
  };
}

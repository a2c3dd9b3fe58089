/**
 * One postgres.js client made of several single-connection clients, tried in order: a query or transaction
 * goes to the first one with nothing in flight (else to the least busy).
 *
 * postgres.js hands out its idle connections first in, first out, so a pool of N serving one query at a time
 * rotates through all N: every backend stays alive (none is ever idle long enough for `idle_timeout`), and
 * each statement is prepared N times before every connection knows it. Here sequential work (an API call, an
 * observer's tick) keeps to the first connection, which stays warm, and the k-th connection is used only while
 * k things overlap: the later ones close after their idle timeout.
 *
 * A plain query may also go behind another one on a connection (postgres.js pipelines them: it costs the
 * second one the first one's execution, a fraction of a millisecond for svcd's reads) up to PIPELINE_DEPTH
 * in flight, and not behind a transaction, which holds its connection. So the two reads of one observer
 * tick (Promise.all) share the first connection instead of keeping a second backend alive at idle (15 MiB
 * of the private server's RSS), while a burst still spreads over the others.
 */

import { observeQuery } from './observe-query.ts';

/** What drizzle and the hooks use of a postgres.js client (and what a transaction's client offers). */
export interface TierClient {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): PromiseLike<unknown>;
  begin(fn: (tx: never) => unknown): Promise<unknown>;
  reserve?(): Promise<unknown>;
  end(options?: { timeout?: number }): Promise<void>;
  options: { parsers: Record<string, unknown>; serializers: Record<string, unknown> };
}

export interface TieredClient extends TierClient {
  /** How many calls each client has in flight now (tests). */
  inFlight(): number[];
}

/** Plain queries one connection may have in flight before the next goes to another connection. */
const PIPELINE_DEPTH = 2;

export function createTieredClient(clients: readonly TierClient[]): TieredClient {
  const [primary] = clients;
  if (!primary) throw new Error('createTieredClient needs at least one client');
  /** Calls in flight per client, and of them the transactions. */
  const busy = clients.map(() => 0);
  const inTx = clients.map(() => 0);
  const leastBusy = (): number => {
    let best = 0;
    for (let i = 0; i < busy.length; i++) if (busy[i]! < busy[best]!) best = i;
    return best;
  };
  /** A transaction: the first client with nothing in flight, else the least busy. */
  const pickForTx = (): number => {
    const idle = busy.indexOf(0);
    return idle >= 0 ? idle : leastBusy();
  };
  /** A plain query: the first client with no transaction and fewer than PIPELINE_DEPTH queries, else the least busy. */
  const pickForQuery = (): number => {
    for (let i = 0; i < busy.length; i++) if (inTx[i] === 0 && busy[i]! < PIPELINE_DEPTH) return i;
    return leastBusy();
  };

  // What drizzle sets on the client's options (its parsers and serializers of dates and JSON) must hold on
  // every client. Each client's connections keep the tables they were made with, so a change through
  // `options` is written into every client's own tables.
  const mirror = (tables: Record<string, unknown>[]) =>
    new Proxy(tables[0]!, {
      set(_target, key, value) {
        for (const t of tables) t[key as string] = value;
        return true;
      },
    });
  const options = {
    ...primary.options,
    parsers: mirror(clients.map((c) => c.options.parsers)),
    serializers: mirror(clients.map((c) => c.options.serializers)),
  };

  return {
    options,
    unsafe(query, params, options) {
      const tier = pickForQuery();
      const q = clients[tier]!.unsafe(query, params, options);
      busy[tier]!++;
      // A postgres.js query runs when awaited: it is in flight from here until it settles (drizzle awaits
      // every query it makes).
      let counted = true;
      const done = () => {
        if (counted) (counted = false), busy[tier]!--;
      };
      return observeQuery(q, { fulfilled: done, rejected: done });
    },
    async begin(fn) {
      const tier = pickForTx();
      busy[tier]!++;
      inTx[tier]!++;
      try {
        return await clients[tier]!.begin(fn);
      } finally {
        busy[tier]!--;
        inTx[tier]!--;
      }
    },
    async end(options) {
      await Promise.all(clients.map((c) => c.end(options)));
    },
    inFlight: () => [...busy],
  };
}

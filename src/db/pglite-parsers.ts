/**
 * drizzle's PGlite driver passes its type parsers (timestamps, dates and intervals left as text, for
 * drizzle to map) with every query, and PGlite then copies its whole parser table (300+ entries)
 * into a new object for that query: about 0.1 ms per query, as much as running a simple one.
 *
 * Installed on the instance once instead, the same parsers give the same rows. A query whose
 * parsers disagree with the ones installed keeps its own (correct, only slower).
 */

type Parser = (value: string, typeId?: number) => unknown;
type Parsers = Record<number, Parser>;
interface QueryOptions {
  parsers?: Parsers;
  [k: string]: unknown;
}
type Query = (sql: string, params?: unknown[], options?: QueryOptions) => Promise<unknown>;

export interface ParserClient {
  parsers: Parsers;
  query: Query;
  transaction<T>(fn: (tx: never) => Promise<T>): Promise<T>;
}

/**
 * Wrap `client.query` (and the query of each transaction) so that per-query parsers are installed
 * on the instance once and left out of the query. The instance then parses those types that way for
 * every query: svcd reaches PGlite only through drizzle, which passes the same ones every time.
 */
export function installQueryParsers(client: ParserClient): void {
  const installed = client.parsers;
  /** The source of each parser installed here, by type: a later table must agree with it. */
  const sources = new Map<number, string>();
  /** Per-query parser tables seen, and whether each one was installed (agreed with the earlier ones). */
  const seen = new WeakMap<Parsers, boolean>();
  const agrees = (parsers: Parsers): boolean => {
    let ok = seen.get(parsers);
    if (ok !== undefined) return ok;
    const entries = Object.entries(parsers).map(([oid, fn]) => [Number(oid), fn] as const);
    // The same source is the same parser (drizzle's are `(value) => value`, closures over nothing).
    ok = entries.every(([oid, fn]) => (sources.get(oid) ?? fn.toString()) === fn.toString());
    if (ok) {
      for (const [oid, fn] of entries) {
        if (sources.has(oid)) continue;
        installed[oid] = fn;
        sources.set(oid, fn.toString());
      }
    }
    seen.set(parsers, ok);
    return ok;
  };
  const strip = (options: QueryOptions | undefined): QueryOptions | undefined => {
    if (!options?.parsers || !agrees(options.parsers)) return options;
    const { parsers: _installed, ...rest } = options;
    return rest;
  };
  const query = client.query.bind(client);
  client.query = (sql, params, options) => query(sql, params, strip(options));
  const transaction = client.transaction.bind(client);
  client.transaction = (fn) =>
    transaction((tx: never) => {
      const t = tx as { query?: Query };
      const txQuery = t.query;
      if (typeof txQuery === 'function') t.query = (sql, params, options) => txQuery(sql, params, strip(options));
      return fn(tx);
    });
}

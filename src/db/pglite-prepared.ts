/**
 * Named prepared statements for the embedded database.
 *
 * PGlite's `query` sends a statement in six separate trips through the WASM backend (Parse,
 * Describe, Bind, Describe, Execute, Sync), and PostgreSQL parses and plans it again each time.
 * svcd's statements come from drizzle with placeholders, so the same few dozen texts recur. Each
 * text is parsed once here as a named statement; every later run is one trip (Bind, Describe,
 * Execute, Sync). A select by key goes from ~230 to ~90 µs of CPU, an upsert from ~230 to ~120.
 *
 * Rows, errors and parsing are PGlite's own (its protocol serializer and `parseResults`). Only
 * plain DML is prepared; DDL and the rest take PGlite's own path (a migration's one-off statements
 * are not kept). A text whose plan became invalid (the schema changed under it) is prepared again.
 */
import { parse as pgParse, protocol } from '@electric-sql/pglite';

type Serializer = (value: unknown) => string;
type Parsers = Record<number, (value: string, typeId?: number) => unknown>;
export interface QueryOptions {
  rowMode?: 'array' | 'object';
  parsers?: Parsers;
  serializers?: Record<number, Serializer>;
  paramTypes?: number[];
  blob?: unknown;
  [k: string]: unknown;
}
type Query = (sql: string, params?: unknown[], options?: QueryOptions) => Promise<unknown>;
type BackendMessage = { name: string } & Record<string, unknown>;

export interface PreparedClient {
  parsers: Parsers;
  serializers: Record<number, Serializer>;
  query: Query;
  transaction<T>(fn: (tx: never) => Promise<T>): Promise<T>;
  execProtocolStream(message: Uint8Array, options: { syncToFs: boolean }): Promise<BackendMessage[]>;
  syncToFs(): Promise<void>;
  _checkReady(): Promise<void>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * The PGlite release this patch was written against: it reaches into private methods
 * (`_runExclusiveQuery`, `_runExclusiveTransaction`, `_checkReady`), which any release may change.
 * package.json pins exactly this version, and pglite-version.test.ts fails if another is installed.
 */
export const PGLITE_PATCHED_VERSION = '0.5.16';

/** Statements kept prepared at most; the least recently used one is closed beyond that. */
export const MAX_PREPARED = 512;

/** Plain DML (what drizzle's builders produce): worth preparing. */
const DML = /^\s*(?:select|insert|update|delete|with)\b/i;

/** SQLSTATEs meaning "this prepared statement no longer fits the schema": prepare it again. */
const STALE = new Set(['0A000' /* cached plan must not change result type */, '26000' /* invalid statement name */]);

const ser = protocol.serialize;

/** Like PGlite's own errors: the query, its parameters and options ride on the error. */
function annotate(e: unknown, query: string, params: unknown[], options: QueryOptions | undefined): unknown {
  if (e && typeof e === 'object' && 'code' in e) Object.assign(e, { query, params, queryOptions: options });
  return e;
}

export interface PreparedStats {
  /** Statements prepared so far (a text prepared again after eviction counts again). */
  prepared: number;
  /** Runs of an already prepared statement. */
  reused: number;
  /** Statements open now. */
  readonly open: number;
}

/**
 * Route `client.query` and each transaction's `query` through named prepared statements.
 * Install before anything else wraps the client (the wrappers keep the method they found).
 */
export function installPreparedStatements(client: PreparedClient, opts: { max?: number } = {}): PreparedStats {
  const max = opts.max ?? MAX_PREPARED;
  /** Text → statement name and parameter types; a Map's order is its recency. */
  const statements = new Map<string, { name: string; paramTypes: number[] }>();
  /** Names evicted and not yet closed: closed on the next trip. */
  const toClose: string[] = [];
  const stats: PreparedStats = {
    prepared: 0,
    reused: 0,
    get open() {
      return statements.size;
    },
  };
  let seq = 0;
  const stream = (parts: Uint8Array[]) => client.execProtocolStream(Buffer.concat(parts), { syncToFs: false });
  const closing = () => toClose.splice(0).map((name) => ser.close({ type: 'S', name }));

  async function prepare(text: string) {
    const name = `svcd_${(++seq).toString(36)}`;
    const res = await stream([
      ...closing(),
      ser.parse({ name, text, types: [] }),
      ser.describe({ type: 'S', name }),
      ser.sync(),
    ]);
    const st = { name, paramTypes: pgParse.parseDescribeStatementResults(res as never) };
    statements.set(text, st);
    stats.prepared++;
    if (statements.size > max) {
      const [oldest, old] = statements.entries().next().value as [string, { name: string }];
      statements.delete(oldest);
      toClose.push(old.name);
    }
    return st;
  }

  /** One statement, the caller holding PGlite's query lock. `inTx`: a stale plan cannot be retried. */
  async function run(
    text: string,
    params: unknown[],
    options: QueryOptions | undefined,
    inTx: boolean,
  ): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      let st = statements.get(text);
      try {
        if (st) {
          statements.delete(text);
          statements.set(text, st);
          stats.reused++;
        } else {
          st = await prepare(text);
        }
        const types = st.paramTypes;
        const values = params.map((v, i) => {
          if (v === null || v === undefined) return null;
          const s = options?.serializers?.[types[i]!] ?? client.serializers[types[i]!];
          return s ? s(v) : String(v);
        });
        const res = await stream([
          ...closing(),
          ser.bind({ statement: st.name, values: values as never }),
          ser.describe({ type: 'P' }),
          ser.execute({}),
          ser.sync(),
        ]);
        return pgParse.parseResults(res as never, client.parsers as never, options as never)[0];
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (st && typeof code === 'string' && STALE.has(code) && statements.get(text) === st) {
          statements.delete(text);
          toClose.push(st.name);
          if (!inTx && attempt === 0) continue;
        }
        throw annotate(e, text, params, options);
      }
    }
  }

  const preparable = (text: unknown, options: QueryOptions | undefined): text is string =>
    typeof text === 'string' && DML.test(text) && !options?.blob && !options?.paramTypes;

  const query = client.query.bind(client);
  client.query = async (text, params = [], options) => {
    if (!preparable(text, options)) return query(text, params, options);
    await client._checkReady();
    return client._runExclusiveTransaction(() =>
      client._runExclusiveQuery(async () => {
        const r = await run(text, params, options, false);
        await client.syncToFs();
        return r;
      }),
    );
  };
  const transaction = client.transaction.bind(client);
  client.transaction = (fn) =>
    transaction(async (tx: never) => {
      const t = tx as { query?: Query; closed?: boolean };
      const txQuery = t.query;
      // The statements not answered yet: a callback may end with its last ones in flight, and they are
      // part of the transaction (as on PostgreSQL, pipelined-begin.ts): COMMIT waits for them, and one that
      // failed fails the transaction (rolled back).
      const inFlight = new Set<Promise<unknown>>();
      if (typeof txQuery === 'function') {
        t.query = (text, params = [], options) => {
          const p =
            t.closed || !preparable(text, options)
              ? txQuery(text, params, options)
              : client._runExclusiveQuery(() => run(text, params, options, true));
          inFlight.add(p);
          const done = () => void inFlight.delete(p);
          p.then(done, done);
          return p;
        };
      }
      const result = await fn(tx);
      const failure = (await Promise.allSettled(inFlight)).find((r) => r.status === 'rejected');
      if (failure) throw failure.reason;
      return result;
    });
  return stats;
}

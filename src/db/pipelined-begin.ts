/**
 * postgres.js's `begin()` waits for BEGIN's answer before it runs the transaction's first statement: a
 * round trip of its own in every transaction. This `begin()` reserves a connection and sends BEGIN without
 * waiting, so that it goes out together with the first statement (postgres.js pipelines the queries of one
 * connection; PostgreSQL runs them in order). What follows is as before: the statements, then COMMIT, or
 * ROLLBACK when the callback throws (a failed statement has aborted the transaction anyway). Nested
 * transactions are savepoints, as in postgres.js.
 *
 * The callback may also end with its last statements still in flight (issued, not yet answered): COMMIT
 * then goes out behind them without waiting for their answers, one round trip less. PostgreSQL runs them
 * before it; if one of them fails, the transaction is aborted, PostgreSQL answers the COMMIT with a
 * rollback, and the transaction fails with that statement's error.
 */

import { observeQuery } from './observe-query.ts';

/** A postgres.js query: lazy until awaited or `execute()`d. */
interface Query extends PromiseLike<unknown> {
  execute(): Query;
}

/** What this needs of a postgres.js client and of one of its reserved connections. */
export interface ReservingClient {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): PromiseLike<unknown>;
  begin(fn: (tx: ReservedClient) => unknown): Promise<unknown>;
  reserve(): Promise<ReservedClient>;
}
export interface ReservedClient {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): PromiseLike<unknown>;
  savepoint?(fn: (tx: ReservedClient) => unknown): Promise<unknown>;
  release(): void;
}

export function pipelineBegin(sql: ReservingClient): void {
  sql.begin = async (fn) => {
    const conn = await sql.reserve();
    try {
      // As postgres.js does: a statement of the transaction that failed fails it, even if the callback
      // caught that error (COMMIT of an aborted transaction would otherwise roll back without a word).
      let failed: { error: unknown } | undefined;
      const unsafe = conn.unsafe.bind(conn);
      conn.unsafe = (text, params, options) => {
        return observeQuery(unsafe(text, params, options), { rejected: (e) => void (failed ??= { error: e }) });
      };
      // Sent now, answered with the first statement's answer; awaited with COMMIT's (a failed BEGIN means a
      // broken connection, on which the statements and COMMIT failed too).
      const begun = Promise.resolve((conn.unsafe('begin') as Query).execute());
      begun.catch(() => {});
      let savepoints = 0;
      conn.savepoint = async (inner) => {
        const name = `s${savepoints++}`;
        const before = failed;
        await conn.unsafe(`savepoint ${name}`);
        try {
          const result = await inner(conn);
          await conn.unsafe(`release savepoint ${name}`);
          return result;
        } catch (e) {
          await conn.unsafe(`rollback to savepoint ${name}`);
          failed = before;
          throw e;
        }
      };
      let result: unknown;
      try {
        result = await fn(conn);
        if (failed) throw failed.error;
      } catch (e) {
        await Promise.resolve(conn.unsafe('rollback')).catch(() => {});
        throw (e as { code?: string }).code === '25P02' && failed ? failed.error : e;
      }
      // COMMIT goes out now, behind what is still in flight (BEGIN too, when the callback left every
      // statement in flight: then the whole transaction is one round trip).
      await Promise.all([begun, conn.unsafe('commit')]);
      // A statement left in flight by the callback failed: the COMMIT was a rollback. (Set by the answers
      // awaited just now: the cast undoes the narrowing of the check above.)
      const late = failed as { error: unknown } | undefined;
      if (late) throw late.error;
      return result;
    } finally {
      conn.release();
    }
  };
}

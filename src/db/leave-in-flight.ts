/**
 * A transaction's last statements, left in flight: the callback returns without awaiting them, so COMMIT
 * goes out right behind them (pipelined-begin.ts on PostgreSQL; PGlite waits for them, pglite-prepared.ts).
 * A failure of one fails the transaction with its error, so the promise's own rejection is marked handled
 * here; await it after the transaction for its value.
 */
export function leaveInFlight<T>(statements: Promise<T>): Promise<T> {
  statements.catch(() => {});
  return statements;
}

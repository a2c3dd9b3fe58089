import type { Db } from '../db/types.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import { insertOperations, transitionOperation } from './operation-store.ts';
import type { OperationMemory } from './operation-memory.ts';

/** A change of an operation row (its status, error, metadata). */
export type OperationPatch = Parameters<typeof transitionOperation>[2];

export interface TaskEndWriterDeps {
  db: Db;
  clock: Clock;
  log: { error(o: object, m?: string): void };
  memory: Pick<OperationMemory, 'task'>;
  /** Publish a row (and wake its waiters). */
  announce(row: OperationRow): void;
  /** Write a change of a row now, and announce it. */
  transition(id: string, patch: OperationPatch): Promise<unknown>;
  /** How long after its end a task's final row is written. */
  writeBehindMs: number;
}

/**
 * Task ends announced at once and written a moment later, in a batch with the other ends of that
 * moment: the end of a written row (`patch`), or the whole final row of a task never written (`row`).
 */
export function createTaskEndWriter({
  db,
  clock,
  log,
  memory,
  announce,
  transition,
  writeBehindMs,
}: TaskEndWriterDeps) {
  const unwritten = new Map<string, { patch: OperationPatch; at: Date } | { row: OperationRow }>();
  let writeTimer: ReturnType<Clock['setTimer']> | undefined;
  let writing: Promise<void> = Promise.resolve();

  /** Write the task ends announced so far (behind any write still going): new rows in one insert, then each end. */
  function flush(): Promise<void> {
    if (writeTimer) clock.clearTimer(writeTimer);
    writeTimer = undefined;
    const batch = [...unwritten];
    unwritten.clear();
    writing = writing.then(async () => {
      const rows = batch.flatMap(([, e]) => ('row' in e ? [e.row] : []));
      // One statement; if it fails, one each, so that one bad row does not lose the others.
      if (rows.length > 1)
        await insertOperations(db, rows).then(
          () => rows.splice(0),
          () => {},
        );
      for (const row of rows)
        await insertOperations(db, [row]).catch((err: unknown) =>
          log.error({ err, op: row.id }, 'failed to record an operation'),
        );
      for (const [id, e] of batch) {
        if ('patch' in e)
          await transitionOperation(db, id, e.patch, e.at).catch((err: unknown) =>
            log.error({ err, op: id }, 'failed to record the end of an operation'),
          );
      }
    });
    return writing;
  }

  /**
   * End a task of this process: announced at once (waiters woken, the row kept in memory), written
   * a moment later, in a batch with the other ends of that moment. A short command's round trip then
   * has no database write in it, and neither has the request right behind it (the next exec of a
   * script). Until written, a reader of the table on another member sees the task still running (or
   * not at all, if its row was never written: startTask `deferInsert`), and a crash leaves it to
   * recover() at the next start, as a crash during the task would.
   */
  function finish(id: string, patch: OperationPatch, written: boolean): Promise<unknown> {
    const current = memory.task(id);
    if (!current) return written ? transition(id, patch) : Promise.resolve();
    const at = new Date(clock.now());
    const row = { ...current, ...patch, updatedAt: at };
    announce(row);
    unwritten.set(id, written ? { patch, at } : { row });
    writeTimer ??= clock.setTimer(() => void flush(), writeBehindMs);
    return Promise.resolve();
  }

  return { finish, flush };
}
export type TaskEndWriter = ReturnType<typeof createTaskEndWriter>;

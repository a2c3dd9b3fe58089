import type { Db } from '../db/types.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import { insertOperation } from './operation-store.ts';
import type { OperationMemory } from './operation-memory.ts';
import { StatusCode } from './status.ts';
import type { OperationPatch, TaskEndWriter } from './task-end-writer.ts';

export interface TaskContext {
  id: string;
  signal: AbortSignal;
  /** Merge keys into the operation's metadata (published as an operation event). */
  setMetadata(patch: Record<string, unknown>): Promise<void>;
}
export type TaskFn = (ctx: TaskContext) => Promise<Record<string, unknown> | void>;

export interface RunTaskDeps {
  db: Db;
  clock: Clock;
  log: { error(o: object, m?: string): void };
  memory: Pick<OperationMemory, 'addTask' | 'task'>;
  /** Running tasks' cancel hooks by operation id (DELETE /1.0/operations/<id>, stop). */
  cancelHooks: Map<string, AbortController>;
  announce(row: OperationRow): void;
  transition(id: string, patch: OperationPatch): Promise<unknown>;
  ends: Pick<TaskEndWriter, 'finish'>;
}

/** How long a deferInsert task runs before its row is written (a shorter one's is written with its end). */
const DEFER_INSERT_MS = 250;

/**
 * Start an imperative operation (`draft`, the row it starts as): its task settles it (Success,
 * Failure, or Cancelled if aborted). `deferInsert` (for short commands, whose latency an insert
 * would add to): the operation is answered from memory and its task started at once; its row is
 * written with its end (one write, behind, see the task end writer) or, if it runs longer than
 * DEFER_INSERT_MS, then. A failed write of a running task aborts it, which then ends as Failure
 * naming the write's error: such a task must not settle anything outside the operation before its
 * signal says it may go on.
 */
export async function runOperationTask(
  deps: RunTaskDeps,
  draft: OperationRow,
  task: TaskFn,
  opts: { deferInsert?: boolean } = {},
): Promise<OperationRow> {
  const { db, clock, log, memory, cancelHooks, announce, transition, ends } = deps;
  const deferred = opts.deferInsert === true;
  const ac = new AbortController();
  const register = (row: OperationRow) => {
    cancelHooks.set(row.id, ac);
    memory.addTask(row);
    announce(row);
  };
  let insertStarted = false;
  let insert!: () => void;
  const inserted = new Promise<void>((resolve) => (insert = resolve))
    .then(() => insertOperation(db, draft))
    .then((row) => {
      if (!deferred) register(row);
      return row;
    });
  let insertError: unknown;
  inserted.catch((e: unknown) => {
    insertError = e;
    ac.abort(e);
  });
  let deferTimer: ReturnType<Clock['setTimer']> | undefined;
  /** Write the row now (once); a deferred task's timer is then moot. */
  const startInsert = () => {
    if (deferTimer) clock.clearTimer(deferTimer);
    if (insertStarted) return;
    insertStarted = true;
    insert();
  };
  if (deferred) {
    register(draft);
    deferTimer = clock.setTimer(startInsert, DEFER_INSERT_MS);
  }
  let metadata = { ...draft.metadata };
  const ctx: TaskContext = {
    id: draft.id,
    signal: ac.signal,
    async setMetadata(patch) {
      startInsert();
      await inserted;
      metadata = { ...metadata, ...patch };
      await transition(draft.id, {
        statusCode: ac.signal.aborted ? StatusCode.Cancelling : StatusCode.Running,
        metadata,
      });
    },
  };
  const run = async () => {
    let end: OperationPatch;
    try {
      if (!deferred) await inserted;
      const out = await task(ctx);
      if (out) metadata = { ...metadata, ...out };
      end = ac.signal.aborted
        ? { statusCode: StatusCode.Cancelled, metadata, err: 'operation cancelled', mayCancel: false }
        : { statusCode: StatusCode.Success, metadata, mayCancel: false };
    } catch (e) {
      const cancelled = ac.signal.aborted;
      end = {
        statusCode: cancelled ? StatusCode.Cancelled : StatusCode.Failure,
        err: cancelled ? 'operation cancelled' : errorText(e),
        metadata,
        mayCancel: false,
      };
    }
    // Never written: the end is the whole row, written behind.
    if (deferred && !insertStarted) {
      if (deferTimer) clock.clearTimer(deferTimer);
      return void ends.finish(draft.id, end, false);
    }
    if (
      await inserted.then(
        () => true,
        () => false,
      )
    ) {
      await ends
        .finish(draft.id, end, true)
        .catch((err2: unknown) => log.error({ err: err2, op: draft.id }, 'failed to record the end of an operation'));
    } else if (deferred) {
      // Answered already, its write failed: its end is known here only.
      log.error({ err: insertError, op: draft.id }, 'failed to record an operation');
      const current = memory.task(draft.id);
      if (current)
        announce({
          ...current,
          ...end,
          statusCode: StatusCode.Failure,
          err: `could not record the operation: ${errorText(insertError)}`,
          updatedAt: new Date(clock.now()),
        });
    }
    // Otherwise nothing to settle: the row never made it and startTask failed with the insert's error.
  };
  void run();
  if (deferred) return draft;
  startInsert();
  return inserted;
}

function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

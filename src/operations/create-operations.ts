import { randomUUID } from 'node:crypto';
import type { WriteCounter } from '../db/local-writes.ts';
import type { Db, DbOrTx } from '../db/types.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { NotFoundError, ValidationError } from '../desired/errors.ts';
import type { EventBus } from '../events/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import {
  expireOperations,
  failOrphanedOperations,
  failTargetOperations,
  insertOperation,
  insertOperations,
  listActiveOperations,
  pruneOperations,
  readOperation,
  settleConvergedOperations,
  transitionOperation,
} from './operation-store.ts';
import { renderOperation } from './render-operation.ts';
import { isFinalStatus, StatusCode } from './status.ts';
import { createWebsocketSecrets } from './websocket-secrets.ts';

export interface OperationSpec {
  /** A uuid chosen by the caller (to issue websocket secrets before the operation is announced); default a fresh one. */
  id?: string;
  class: 'task' | 'websocket' | 'token';
  description: string;
  project: string;
  resources?: Record<string, string[]>;
  metadata?: Record<string, unknown>;
  mayCancel?: boolean;
  /** For desired writes: the reconcile that settles this operation. */
  target?: { kind: string; key: string; generation: number };
  /** Override the default deadline (ms from now); 0 = none. */
  deadlineMs?: number;
}

export interface TaskContext {
  id: string;
  signal: AbortSignal;
  /** Merge keys into the operation's metadata (published as an operation event). */
  setMetadata(patch: Record<string, unknown>): Promise<void>;
}
export type TaskFn = (ctx: TaskContext) => Promise<Record<string, unknown> | void>;

export interface OperationsOptions {
  db: Db;
  /** Set when this process is the database's only writer (Database.localWrites). */
  localWrites: WriteCounter | undefined;
  bus: EventBus;
  clock: Clock;
  node: string;
  log: { warn(o: object, m?: string): void; error(o: object, m?: string): void };
  /** Default time a desired-write operation waits for convergence. */
  defaultDeadlineMs?: number;
  /** How long finished operations stay readable. */
  retentionMs?: number;
  sweepIntervalMs?: number;
  /** How long after its end a task's final row is written (finishTask). */
  writeBehindMs?: number;
}

/**
 * The operations module: the only writer of operation rows. Operations are persisted; waiters,
 * cancel hooks and websocket secrets live in memory.
 */
export function createOperations(opts: OperationsOptions) {
  const { db, bus, clock, node, log } = opts;
  const defaultDeadlineMs = opts.defaultDeadlineMs ?? 10 * 60_000;
  const retentionMs = opts.retentionMs ?? 15 * 60_000;
  const sweepIntervalMs = opts.sweepIntervalMs ?? 2_000;
  const waiters = new Map<string, Set<() => void>>();
  const cancelHooks = new Map<string, AbortController>();
  const websockets = createWebsocketSecrets<unknown>();
  /**
   * Operations this process saw end, for a while: a final row never changes, so the wait that the
   * ending wakes (and the GET that usually follows) need no database read.
   */
  const finals = new Map<string, { row: OperationRow; at: number }>();
  const FINAL_MEMORY_MS = 60_000;
  /** Running tasks of this process (startTask): only this process writes their rows, so memory is current. */
  const tasks = new Map<string, OperationRow>();
  /**
   * Every other operation announced and not ended yet, when this process is the database's only
   * writer (PGlite, local-writes.ts): every change of an operation row goes through this module and
   * is announced, so memory is current and a wait or GET needs no read. Not on a shared PostgreSQL,
   * where other members settle operations too.
   */
  const live = opts.localWrites ? new Map<string, OperationRow>() : undefined;
  let sweepTimer: ReturnType<Clock['setTimer']> | undefined;
  let stopped = false;
  const now = () => new Date(clock.now());

  function announce(row: OperationRow): void {
    bus.publish({ type: 'operation', project: row.project, metadata: renderOperation(row) as never });
    if (tasks.has(row.id)) tasks.set(row.id, row);
    // (An announcement overtaken by the end, e.g. a creation behind its settling, changes nothing.)
    else if (live && !finals.has(row.id)) live.set(row.id, row);
    if (isFinalStatus(row.statusCode)) {
      tasks.delete(row.id);
      live?.delete(row.id);
      finals.set(row.id, { row, at: clock.now() });
      websockets.revoke(row.id);
      cancelHooks.delete(row.id);
    }
    const set = waiters.get(row.id);
    if (set) for (const wake of [...set]) wake();
  }
  const announceAll = (rows: OperationRow[]) => rows.forEach(announce);

  /** The row an operation starts as (what the insert writes). */
  function rowFor(spec: OperationSpec, statusCode: number): OperationRow {
    const t = now();
    const deadlineMs = spec.deadlineMs ?? (spec.target ? defaultDeadlineMs : 0);
    return {
      id: spec.id ?? randomUUID(),
      class: spec.class,
      description: spec.description,
      statusCode,
      resources: spec.resources ?? {},
      metadata: spec.metadata ?? {},
      mayCancel: spec.mayCancel ?? false,
      err: '',
      project: spec.project,
      node,
      targetKind: spec.target?.kind ?? null,
      targetKey: spec.target?.key ?? null,
      targetGeneration: spec.target?.generation ?? null,
      deadlineAt: deadlineMs > 0 ? new Date(t.getTime() + deadlineMs) : null,
      createdAt: t,
      updatedAt: t,
    };
  }

  async function transition(id: string, patch: Parameters<typeof transitionOperation>[2]) {
    const row = await transitionOperation(db, id, patch, now());
    if (row) announce(row);
    return row;
  }

  /**
   * Task ends announced but not written yet (finishTask), and the timer and write chain that store
   * them: the end of a written row (`patch`), or the whole final row of a task never written (`row`).
   */
  const unwritten = new Map<string, { patch: Parameters<typeof transitionOperation>[2]; at: Date } | { row: OperationRow }>();
  let writeTimer: ReturnType<Clock['setTimer']> | undefined;
  let writing: Promise<void> = Promise.resolve();
  const writeBehindMs = opts.writeBehindMs ?? 20;

  /**
   * End a task of this process: announced at once (waiters woken, the row kept in `finals`), written
   * a moment later, in a batch with the other ends of that moment. A short command's round trip then
   * has no database write in it, and neither has the request right behind it (the next exec of a
   * script). Until written, a reader of the table on another member sees the task still running (or
   * not at all, if its row was never written: startTask `deferInsert`), and a crash leaves it to
   * recover() at the next start, as a crash during the task would.
   */
  function finishTask(id: string, patch: Parameters<typeof transitionOperation>[2], written: boolean): Promise<unknown> {
    const current = tasks.get(id);
    if (!current) return written ? transition(id, patch) : Promise.resolve();
    const at = now();
    const row = { ...current, ...patch, updatedAt: at };
    announce(row);
    unwritten.set(id, written ? { patch, at } : { row });
    writeTimer ??= clock.setTimer(() => void writeEnds(), writeBehindMs);
    return Promise.resolve();
  }

  /** Write the task ends announced so far (behind any write still going): new rows in one insert, then each end. */
  function writeEnds(): Promise<void> {
    if (writeTimer) clock.clearTimer(writeTimer);
    writeTimer = undefined;
    const batch = [...unwritten];
    unwritten.clear();
    writing = writing.then(async () => {
      const rows = batch.flatMap(([, e]) => ('row' in e ? [e.row] : []));
      // One statement; if it fails, one each, so that one bad row does not lose the others.
      if (rows.length > 1) await insertOperations(db, rows).then(() => rows.splice(0), () => {});
      for (const row of rows) await insertOperations(db, [row]).catch((err: unknown) => log.error({ err, op: row.id }, 'failed to record an operation'));
      for (const [id, e] of batch) {
        if ('patch' in e) await transitionOperation(db, id, e.patch, e.at).catch((err: unknown) => log.error({ err, op: id }, 'failed to record the end of an operation'));
      }
    });
    return writing;
  }

  const service = {
    websockets,

    /** Insert an operation inside the caller's transaction (the desired write). Call announce() after commit. */
    async insert(tx: DbOrTx, spec: OperationSpec): Promise<OperationRow> {
      return insertOperation(tx, rowFor(spec, StatusCode.Running));
    },

    /** Publish the creation event of an operation inserted in a committed transaction. */
    announce,

    /**
     * Start an imperative operation: its task settles it (Success, Failure, or Cancelled if aborted).
     * `deferInsert` (for short commands, whose latency an insert would add to): the operation is
     * answered from memory and its task started at once; its row is written with its end (one write,
     * behind, see finishTask) or, if it runs longer than DEFER_INSERT_MS, then. A failed write of a
     * running task aborts it, which then ends as Failure naming the write's error: such a task must
     * not settle anything outside the operation before its signal says it may go on.
     */
    async startTask(spec: OperationSpec, task: TaskFn, opts: { deferInsert?: boolean } = {}): Promise<OperationRow> {
      const draft = rowFor(spec, StatusCode.Running);
      const deferred = opts.deferInsert === true;
      const ac = new AbortController();
      const register = (row: OperationRow) => {
        cancelHooks.set(row.id, ac);
        tasks.set(row.id, row);
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
          await transition(draft.id, { statusCode: ac.signal.aborted ? StatusCode.Cancelling : StatusCode.Running, metadata });
        },
      };
      const run = async () => {
        let end: Parameters<typeof transitionOperation>[2];
        try {
          if (!deferred) await inserted;
          const out = await task(ctx);
          if (out) metadata = { ...metadata, ...out };
          end = ac.signal.aborted
            ? { statusCode: StatusCode.Cancelled, metadata, err: 'operation cancelled', mayCancel: false }
            : { statusCode: StatusCode.Success, metadata, mayCancel: false };
        } catch (e) {
          const cancelled = ac.signal.aborted;
          end = { statusCode: cancelled ? StatusCode.Cancelled : StatusCode.Failure, err: cancelled ? 'operation cancelled' : errorText(e), metadata, mayCancel: false };
        }
        // Never written: the end is the whole row, written behind.
        if (deferred && !insertStarted) {
          if (deferTimer) clock.clearTimer(deferTimer);
          return void finishTask(draft.id, end, false);
        }
        if (await inserted.then(() => true, () => false)) {
          await finishTask(draft.id, end, true).catch((err2: unknown) => log.error({ err: err2, op: draft.id }, 'failed to record the end of an operation'));
        } else if (deferred) {
          // Answered already, its write failed: its end is known here only.
          log.error({ err: insertError, op: draft.id }, 'failed to record an operation');
          const current = tasks.get(draft.id);
          if (current) announce({ ...current, ...end, statusCode: StatusCode.Failure, err: `could not record the operation: ${errorText(insertError)}`, updatedAt: now() });
        }
        // Otherwise nothing to settle: the row never made it and startTask failed with the insert's error.
      };
      void run();
      if (deferred) return draft;
      startInsert();
      return inserted;
    },

    async get(id: string, project?: string): Promise<OperationRow> {
      if (!UUID.test(id)) throw new NotFoundError('Operation not found');
      const row = finals.get(id)?.row ?? tasks.get(id) ?? live?.get(id) ?? (await readOperation(db, id));
      if (!row || (project !== undefined && row.project !== project)) throw new NotFoundError('Operation not found');
      return row;
    },

    /**
     * Active operations, newest first: one that ended here a moment ago is left out even before its
     * end is written, and a task of this process is in even before its row is (deferInsert).
     */
    async list(project?: string): Promise<OperationRow[]> {
      const rows = (await listActiveOperations(db, project)).filter((r) => !finals.has(r.id));
      const listed = new Set(rows.map((r) => r.id));
      const unlisted = [...tasks.values()].filter((r) => !listed.has(r.id) && (project === undefined || r.project === project));
      if (unlisted.length === 0) return rows;
      return [...rows, ...unlisted].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    },

    /** Resolve once the operation is final, or after timeoutMs (negative = no limit), or on abort. */
    async wait(id: string, timeoutMs: number, signal?: AbortSignal, project?: string): Promise<OperationRow> {
      const deadline = timeoutMs < 0 ? Infinity : clock.now() + timeoutMs;
      for (;;) {
        const row = await service.get(id, project);
        if (isFinalStatus(row.statusCode) || clock.now() >= deadline || signal?.aborted) return row;
        // Woken by any change of this operation; re-poll every 2 s as well for changes made by other cluster members.
        await new Promise<void>((resolve) => {
          const set = waiters.get(id) ?? new Set();
          waiters.set(id, set);
          const done = () => {
            set.delete(done);
            if (set.size === 0) waiters.delete(id);
            clock.clearTimer(timer);
            signal?.removeEventListener('abort', done);
            resolve();
          };
          const timer = clock.setTimer(done, Math.min(2_000, deadline - clock.now()));
          set.add(done);
          signal?.addEventListener('abort', done, { once: true });
        });
      }
    },

    /** DELETE /1.0/operations/<id>: Cancelling now, Cancelled when the task has stopped. */
    async cancel(id: string, project?: string): Promise<OperationRow> {
      const row = await service.get(id, project);
      if (isFinalStatus(row.statusCode)) throw new ValidationError('Operation has already finished');
      const ac = cancelHooks.get(id);
      if (!row.mayCancel || !ac) throw new ValidationError('This operation cannot be cancelled');
      const updated = await transition(id, { statusCode: StatusCode.Cancelling });
      ac.abort(new Error('operation cancelled'));
      return updated ?? row;
    },

    // --- Settler for the reconcile manager -------------------------------------------------
    async converged(kind: string, key: string, observedGeneration: number): Promise<void> {
      announceAll(await settleConvergedOperations(db, kind, key, observedGeneration, now()));
    },
    async failed(kind: string, key: string, message: string, terminal: boolean): Promise<void> {
      if (terminal) announceAll(await failTargetOperations(db, kind, key, message, now()));
    },

    /** At start: operations this node was running with no reconcile to settle them end as Failure. */
    async recover(): Promise<number> {
      const rows = await failOrphanedOperations(db, node, 'svcd stopped while this operation was running', now());
      announceAll(rows);
      return rows.length;
    },

    /** Fail operations past their deadline, prune old finished ones. */
    async sweep(): Promise<void> {
      for (const [id, f] of finals) {
        if (clock.now() - f.at <= FINAL_MEMORY_MS) continue;
        finals.delete(id);
        live?.delete(id);
      }
      announceAll(await expireOperations(db, now()));
      await pruneOperations(db, new Date(clock.now() - retentionMs));
    },

    start(): void {
      stopped = false;
      const tick = () => {
        service
          .sweep()
          .catch((e: unknown) => log.warn({ err: e }, 'operation sweep failed'))
          .finally(() => {
            if (!stopped) sweepTimer = clock.setTimer(tick, sweepIntervalMs);
          });
      };
      sweepTimer = clock.setTimer(tick, sweepIntervalMs);
    },
    /** Stop sweeping, abort the running tasks, and write the task ends not written yet. */
    async stop(): Promise<void> {
      stopped = true;
      if (sweepTimer) clock.clearTimer(sweepTimer);
      for (const ac of cancelHooks.values()) ac.abort(new Error('svcd is stopping'));
      await writeEnds();
    },
  };
  return service;
}
export type Operations = ReturnType<typeof createOperations>;

/** How long a deferInsert task runs before its row is written (a shorter one's is written with its end). */
const DEFER_INSERT_MS = 250;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

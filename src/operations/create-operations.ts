import type { WriteCounter } from '../db/local-writes.ts';
import type { Db, DbOrTx } from '../db/types.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { NotFoundError, ValidationError } from '../desired/errors.ts';
import type { EventBus } from '../events/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import { newOperationRow, type OperationSpec } from './new-operation-row.ts';
import { createOperationMemory } from './operation-memory.ts';
import {
  expireOperations,
  failOrphanedOperations,
  failTargetOperations,
  insertOperation,
  listActiveOperations,
  listFinishedOperations,
  pruneOperations,
  readOperation,
  type ResourceFilter,
  settleConvergedOperations,
  transitionOperation,
} from './operation-store.ts';
import { createOperationSweeper } from './operation-sweeper.ts';
import { createOperationWaiters } from './operation-waiters.ts';
import { renderOperation } from './render-operation.ts';
import { runOperationTask, type TaskFn } from './run-operation-task.ts';
import { isFinalStatus, StatusCode } from './status.ts';
import { createTaskEndWriter, type OperationPatch } from './task-end-writer.ts';
import { createWebsocketSecrets } from './websocket-secrets.ts';

export type { OperationSpec } from './new-operation-row.ts';
export type { ResourceFilter } from './operation-store.ts';
export type { TaskContext, TaskFn } from './run-operation-task.ts';

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
  /** How long finished operations stay readable (and listed by history()). */
  retentionMs?: number;
  /** How many finished operations of this member are kept at most, the last to end. */
  retentionCount?: number;
  sweepIntervalMs?: number;
  /** How long after its end a task's final row is written (see task-end-writer.ts). */
  writeBehindMs?: number;
}

/**
 * The operations module: the only writer of operation rows. Operations are persisted; waiters,
 * cancel hooks and websocket secrets live in memory, and so do the rows this process knows to be
 * current (operation-memory.ts).
 */
export function createOperations(opts: OperationsOptions) {
  const { db, bus, clock, node, log } = opts;
  const defaultDeadlineMs = opts.defaultDeadlineMs ?? 10 * 60_000;
  const retentionMs = opts.retentionMs ?? RETENTION_MS;
  const retentionCount = opts.retentionCount ?? RETENTION_COUNT;
  const cancelHooks = new Map<string, AbortController>();
  const websockets = createWebsocketSecrets<unknown>();
  const waiters = createOperationWaiters({ clock });
  // Whether this process is the database's only writer (PGlite): then memory holds every live operation.
  const memory = createOperationMemory({ clock, onlyWriter: opts.localWrites !== undefined });
  const now = () => new Date(clock.now());

  function announce(row: OperationRow): void {
    bus.publish({ type: 'operation', project: row.project, metadata: renderOperation(row) as never });
    memory.record(row);
    if (isFinalStatus(row.statusCode)) {
      websockets.revoke(row.id);
      cancelHooks.delete(row.id);
    }
    waiters.wake(row.id);
  }
  const announceAll = (rows: OperationRow[]) => rows.forEach(announce);
  const rowFor = (spec: OperationSpec, statusCode: number) =>
    newOperationRow(spec, statusCode, { now: now(), node, defaultDeadlineMs });

  async function transition(id: string, patch: OperationPatch) {
    const row = await transitionOperation(db, id, patch, now());
    if (row) announce(row);
    return row;
  }

  const ends = createTaskEndWriter({
    db,
    clock,
    log,
    memory,
    announce,
    transition,
    writeBehindMs: opts.writeBehindMs ?? 20,
  });
  const taskDeps = { db, clock, log, memory, cancelHooks, announce, transition, ends };

  const service = {
    websockets,

    /** Insert an operation inside the caller's transaction (the desired write). Call announce() after commit. */
    async insert(tx: DbOrTx, spec: OperationSpec): Promise<OperationRow> {
      return insertOperation(tx, rowFor(spec, StatusCode.Running));
    },

    /** Publish the creation event of an operation inserted in a committed transaction. */
    announce,

    /** Start an imperative operation: its task settles it (run-operation-task.ts; `deferInsert` there). */
    startTask(spec: OperationSpec, task: TaskFn, opts: { deferInsert?: boolean } = {}): Promise<OperationRow> {
      return runOperationTask(taskDeps, rowFor(spec, StatusCode.Running), task, opts);
    },

    async get(id: string, project?: string): Promise<OperationRow> {
      if (!UUID.test(id)) throw new NotFoundError('Operation not found');
      const row = memory.get(id) ?? (await readOperation(db, id));
      if (!row || (project !== undefined && row.project !== project)) throw new NotFoundError('Operation not found');
      return row;
    },

    /**
     * Active operations, newest first: one that ended here a moment ago is left out even before its
     * end is written, and a task of this process is in even before its row is (deferInsert).
     */
    async list(project?: string): Promise<OperationRow[]> {
      const rows = (await listActiveOperations(db, project)).filter((r) => !memory.ended(r.id));
      const listed = new Set(rows.map((r) => r.id));
      const unlisted = memory
        .tasks()
        .filter((r) => !listed.has(r.id) && (project === undefined || r.project === project));
      if (unlisted.length === 0) return rows;
      return [...rows, ...unlisted].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    },

    /**
     * Running and recently finished operations of a project, newest first, at most `limit`: what the
     * dashboard shows as history (GET /1.0/operations lists the running ones only, as the spec says).
     * Those that ended here a moment ago count as finished before their end is written.
     */
    async history(project: string, opts: { limit: number; resource?: ResourceFilter }): Promise<OperationRow[]> {
      const { resource } = opts;
      const names = (r: OperationRow) =>
        !resource || resource.urls.some((u) => r.resources[resource.type]?.includes(u));
      const limit = Math.min(opts.limit, retentionCount);
      const [active, finished] = await Promise.all([
        service.list(project),
        listFinishedOperations(db, project, { limit, resource }),
      ]);
      const byId = new Map<string, OperationRow>();
      for (const r of [...active, ...finished]) if (names(r)) byId.set(r.id, r);
      for (const r of memory.ends()) if (r.project === project && names(r)) byId.set(r.id, r);
      return [...byId.values()].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).slice(0, limit);
    },
    /** Resolve once the operation is final, or after timeoutMs (negative = no limit), or on abort. */
    async wait(id: string, timeoutMs: number, signal?: AbortSignal, project?: string): Promise<OperationRow> {
      // The first read may be what this process announced of it (operation-memory.ts); the others are get()'s.
      let first = true;
      const read = async () => {
        const known = first ? memory.announced(id) : undefined;
        first = false;
        if (known && (project === undefined || known.project === project)) return known;
        return service.get(id, project);
      };
      return waiters.wait(read, id, timeoutMs, signal);
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
    /**
     * Settle the operations of `kind`/`key` up to `observedGeneration` as Success, through `tx` (a transaction,
     * or the settler's database); call what it resolves to once that committed: it announces them.
     */
    async convergedIn(tx: DbOrTx, kind: string, key: string, observedGeneration: number): Promise<() => void> {
      const rows = await settleConvergedOperations(tx, kind, key, observedGeneration, now());
      return () => announceAll(rows);
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
      memory.forgetOldEnds();
      announceAll(await expireOperations(db, now()));
      await pruneOperations(db, new Date(clock.now() - retentionMs), { node, count: retentionCount });
    },

    start(): void {
      sweeper.start();
    },
    /** Stop sweeping, abort the running tasks, and write the task ends not written yet. */
    async stop(): Promise<void> {
      sweeper.stop();
      for (const ac of cancelHooks.values()) ac.abort(new Error('svcd is stopping'));
      await ends.flush();
    },
  };
  const sweeper = createOperationSweeper({
    clock,
    intervalMs: opts.sweepIntervalMs ?? 2_000,
    sweep: () => service.sweep(),
    log,
  });
  return service;
}
export type Operations = ReturnType<typeof createOperations>;

/** Finished operations are kept a day, and at most the last 1,000 of each member (docs/dashboard.md). */
const RETENTION_MS = 24 * 60 * 60_000;
const RETENTION_COUNT = 1000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

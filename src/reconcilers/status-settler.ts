import { leaveInFlight } from '../db/leave-in-flight.ts';
import type { Db, Tx } from '../db/types.ts';
import {
  deleteStatusRow,
  forgetFacts,
  readFacts,
  recordConverged,
  recordFailed,
  writeFacts,
} from '../desired/reconcile-facts.ts';
import {
  isMemberScoped,
  leaveMemberStatus,
  recordMemberConverged,
  recordMemberFailed,
} from '../desired/member-status.ts';
import type { Operations } from '../operations/index.ts';
import type { Convergence } from './convergence.ts';
import type { RemoveRows, Settler } from './runtime/index.ts';

/**
 * The reconcile manager's settler: records how far each object converged (reconcile_status),
 * settles the operations waiting on it, and wakes synchronous API calls waiting for it.
 */
export function createStatusSettler({
  db,
  node,
  ops,
  convergence,
  notifyFirst,
}: {
  db: Db;
  /**
   * This member: pools and networks, which every member makes on its own host, are recorded in its own
   * member_status row (desired/member-status.ts); the other kinds in their one reconcile_status row.
   */
  node: string;
  ops: Pick<Operations, 'convergedIn' | 'failed'>;
  convergence?: Pick<Convergence, 'notify'>;
  /**
   * Kinds whose API shows nothing of the status row (a container's GET renders its desired and runtime rows):
   * a sync call waiting on one of them is answered as soon as the host converged, not after the row's write.
   * Operations are still settled by that write (their rows are what a client reads).
   */
  notifyFirst?: (kind: string) => boolean;
}): Settler {
  /**
   * A removed object's rows, its status row and its operations' settlement in one transaction: one round trip
   * (BEGIN, the deletes, the settlement and COMMIT go out together, leave-in-flight.ts) and one commit instead
   * of three. Its operations are announced once that committed.
   */
  async function removeTogether(kind: string, key: string, observedGeneration: number, removeRows?: RemoveRows) {
    forgetFacts(db, kind, key);
    let statements: Promise<[unknown, void, () => void]> | undefined;
    // A pool's or network's rows go only with the last member's part (removeRows asks lastMemberOut); this
    // member's own status row goes now.
    const deleteStatus = (tx: Tx) =>
      isMemberScoped(kind) ? leaveMemberStatus(tx, node, kind, key) : deleteStatusRow(tx, kind, key);
    await db.transaction(async (tx) => {
      statements = leaveInFlight(
        Promise.all([removeRows?.(tx), deleteStatus(tx), ops.convergedIn(tx, kind, key, observedGeneration)]),
      );
    });
    forgetFacts(db, kind, key);
    const [, , announce] = await statements!;
    announce();
  }

  return {
    // The status row and the operations are written together (on PostgreSQL two connections, one round
    // trip): independent writes, and a crash between them is repaired by the reconcile every key gets at start.
    async converged(kind, key, observedGeneration, facts, gone, removeRows) {
      const first = notifyFirst?.(kind) ?? false;
      if (first) convergence?.notify(kind, key, { observed: observedGeneration });
      // A removed object leaves no status row behind (its key is never reconciled again).
      if (gone) await removeTogether(kind, key, observedGeneration, removeRows);
      else {
        // The settlement through `db` too (agent.ts gives the settler Database.relaxed), then announced.
        const [, announce] = await Promise.all([
          isMemberScoped(kind)
            ? recordMemberConverged(db, node, kind, key, observedGeneration, facts)
            : recordConverged(db, kind, key, observedGeneration, facts),
          ops.convergedIn(db, kind, key, observedGeneration),
        ]);
        announce();
      }
      if (!first) convergence?.notify(kind, key, { observed: observedGeneration });
    },
    async failed(kind, key, message, terminal) {
      await Promise.all([
        isMemberScoped(kind)
          ? recordMemberFailed(db, node, kind, key, message, terminal)
          : recordFailed(db, kind, key, message, terminal),
        ops.failed(kind, key, message, terminal),
      ]);
      convergence?.notify(kind, key, { error: message, terminal });
    },
  };
}

export { forgetFacts, readFacts, writeFacts };

/**
 * A reconcile's one copy of its key's facts: every step records in `facts`. `save()` writes them now (for
 * what must be on disk before the next step); `note()` marks a change a crash would only redo, written by
 * `flush()` when the reconcile ends (or by the next `save()`), or handed to the settler with the
 * convergence by `take()` (one write for both).
 */
export interface FactsRecord<F extends object> {
  facts: F;
  save(): Promise<void>;
  note(): void;
  flush(): Promise<void>;
  /** The noted facts, now the caller's to write (the record no longer holds them as noted); else undefined. */
  take(): Record<string, unknown> | undefined;
}

export async function openFacts<F extends object>(db: Db, kind: string, key: string): Promise<FactsRecord<F>> {
  const facts = (await readFacts(db, kind, key)) as F;
  let noted = false;
  const record: FactsRecord<F> = {
    facts,
    async save() {
      noted = false;
      await writeFacts(db, kind, key, { ...facts } as Record<string, unknown>);
    },
    note() {
      noted = true;
    },
    async flush() {
      if (noted) await record.save();
    },
    take() {
      if (!noted) return undefined;
      noted = false;
      return { ...facts } as Record<string, unknown>;
    },
  };
  return record;
}

/** Forget a key's status (its object is gone, or its name is being reused). */
export async function clearStatus(db: Db, kind: string, key: string): Promise<void> {
  forgetFacts(db, kind, key);
  await deleteStatusRow(db, kind, key);
  forgetFacts(db, kind, key);
}

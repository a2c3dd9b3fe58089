import type { OperationRow } from '../desired/schema/index.ts';
import type { Clock } from '../reconcilers/runtime/clock.ts';
import { isFinalStatus } from './status.ts';

/** How long an ended operation stays in memory. */
const FINAL_MEMORY_MS = 60_000;

export interface OperationMemoryDeps {
  clock: Pick<Clock, 'now'>;
  /**
   * This process is the database's only writer (PGlite, local-writes.ts): every change of an
   * operation row goes through the operations module and is announced, so every live operation is
   * remembered too. Not on a shared PostgreSQL, where other members settle operations as well.
   */
  onlyWriter: boolean;
}

/**
 * The operations this process knows to be current, so that a wait or a GET needs no database read:
 * its running tasks, the operations it saw end (for a while: a final row never changes), and, when
 * it is the only writer, every other operation announced and not ended yet.
 *
 * On a shared database the operations this process announced and has not seen end are remembered too,
 * but only for the first read of a wait (`announced`): that read is as good as one made a moment earlier,
 * and the wait reads the database again at its next poll. A GET reads the database, where another member
 * may have settled it.
 */
export function createOperationMemory({ clock, onlyWriter }: OperationMemoryDeps) {
  const finals = new Map<string, { row: OperationRow; at: number }>();
  /** Running tasks of this process (startTask): only this process writes their rows, so memory is current. */
  const tasks = new Map<string, OperationRow>();
  /** Announced here and not seen ending, with when it was announced. */
  const live = new Map<string, { row: OperationRow; at: number }>();
  return {
    /** A task of this process starts: its row is kept here until it ends. */
    addTask(row: OperationRow): void {
      tasks.set(row.id, row);
    },
    /** The current row of a running task of this process. */
    task: (id: string): OperationRow | undefined => tasks.get(id),
    /** The running tasks of this process. */
    tasks: (): OperationRow[] => [...tasks.values()],
    /** Take in an announced row: the task's or live operation's new state, or its end. */
    record(row: OperationRow): void {
      if (tasks.has(row.id)) tasks.set(row.id, row);
      // (An announcement overtaken by the end, e.g. a creation behind its settling, changes nothing.)
      else if (!finals.has(row.id)) live.set(row.id, { row, at: clock.now() });
      if (isFinalStatus(row.statusCode)) {
        tasks.delete(row.id);
        live.delete(row.id);
        finals.set(row.id, { row, at: clock.now() });
      }
    },
    /** The remembered row, if this process knows it to be current. */
    get: (id: string): OperationRow | undefined =>
      finals.get(id)?.row ?? tasks.get(id) ?? (onlyWriter ? live.get(id)?.row : undefined),
    /** For a wait's first read: also what this process last announced of it (see above). */
    announced: (id: string): OperationRow | undefined => finals.get(id)?.row ?? tasks.get(id) ?? live.get(id)?.row,
    /** The operations this process saw end lately (some perhaps not written yet: task-end-writer.ts). */
    ends: (): OperationRow[] => [...finals.values()].map((f) => f.row),
    /** Whether this process saw the operation end (lately). */
    ended: (id: string): boolean => finals.has(id),
    /**
     * Forget the operations that ended longer ago than FINAL_MEMORY_MS; on a shared database also those
     * announced that long ago and not seen ending here (another member may have ended them).
     */
    forgetOldEnds(): void {
      for (const [id, f] of finals) {
        if (clock.now() - f.at <= FINAL_MEMORY_MS) continue;
        finals.delete(id);
        live.delete(id);
      }
      if (onlyWriter) return;
      for (const [id, l] of live) if (clock.now() - l.at > FINAL_MEMORY_MS) live.delete(id);
    },
  };
}
export type OperationMemory = ReturnType<typeof createOperationMemory>;

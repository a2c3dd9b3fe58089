/**
 * Compensation for multi-step host changes: register an undo right after each step succeeds; on failure,
 * run them newest first. Undo failures are collected, never thrown over the original error.
 */
export interface UndoStack {
  push(label: string, undo: () => Promise<void>): void;
  /** Run every registered undo (newest first) and forget them; returns the failures as messages. */
  unwind(): Promise<string[]>;
}

export function createUndoStack(): UndoStack {
  const steps: Array<{ label: string; undo: () => Promise<void> }> = [];
  return {
    push(label, undo) {
      steps.push({ label, undo });
    },
    async unwind() {
      const failures: string[] = [];
      for (let step = steps.pop(); step; step = steps.pop()) {
        try {
          await step.undo();
        } catch (e) {
          failures.push(`${step.label}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      return failures;
    },
  };
}

/**
 * Run `work` with an undo stack; if it throws, unwind and rethrow the original error (with any undo
 * failures appended to its message so nothing left behind goes unreported).
 */
export async function withUndo<T>(work: (undo: UndoStack) => Promise<T>): Promise<T> {
  const undo = createUndoStack();
  try {
    return await work(undo);
  } catch (e) {
    const failures = await undo.unwind();
    if (failures.length > 0 && e instanceof Error) e.message += ` (cleanup also failed: ${failures.join('; ')})`;
    throw e;
  }
}

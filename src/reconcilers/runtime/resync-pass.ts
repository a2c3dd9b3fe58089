import type { Clock } from './clock.ts';

export interface ResyncPassResult {
  /** Why the pass ran ('resync', or a caller's reason). */
  reason: string;
  /** Keys of every kind listed and reconciled by the pass. */
  keys: number;
  /** From the start of the listing to the end of the last of those keys' reconcile runs. */
  tookMs: number;
}

export interface ResyncPass {
  /** A pass begins (before its listing); resolves once it is `listed` and each key `add`ed has run once. */
  begin(reason: string): Promise<ResyncPassResult>;
  /** A key (`kind\0key` id) the pass listed and queued. */
  add(id: string): void;
  /** The listing of every kind is over: no more keys will be added. */
  listed(): void;
  /** A reconcile run of this key ended (whatever its outcome). */
  ran(id: string): void;
  /** Whether a pass is under way. */
  running(): boolean;
}

/**
 * The progress of one full resync pass: the keys it listed, ticked off as their reconcile runs end, so
 * that the time of a whole pass over N containers is known (logged by the reconcile manager, read by
 * bench/scale-bench.ts). One pass at a time; a key queued again meanwhile is ticked off by its next run.
 */
export function createResyncPass(deps: { clock: Pick<Clock, 'now'> }): ResyncPass {
  let current:
    | {
        reason: string;
        left: Set<string>;
        keys: number;
        listing: boolean;
        startedAt: number;
        resolve: (r: ResyncPassResult) => void;
      }
    | undefined;
  const finishIfDone = () => {
    if (!current || current.listing || current.left.size > 0) return;
    const { reason, keys, startedAt, resolve } = current;
    current = undefined;
    resolve({ reason, keys, tookMs: deps.clock.now() - startedAt });
  };
  return {
    begin(reason) {
      if (current) throw new Error('a resync pass is already under way');
      return new Promise<ResyncPassResult>((resolve) => {
        current = { reason, left: new Set(), keys: 0, listing: true, startedAt: deps.clock.now(), resolve };
      });
    },
    add(id) {
      if (!current || current.left.has(id)) return;
      current.left.add(id);
      current.keys++;
    },
    listed() {
      if (current) current.listing = false;
      finishIfDone();
    },
    ran(id) {
      if (current?.left.delete(id)) finishIfDone();
    },
    running: () => current !== undefined,
  };
}

import type { Reconciler } from '../reconcilers/runtime/index.ts';

/**
 * A reconciler narrowed to what this member holds: its sweeps list only its own keys, and a key queued here
 * for an object another member holds (an API write through this member) is left alone, so two members never
 * converge one container on two hosts. A key whose row is gone runs as before (the reconciler's own cleanup).
 */
export function ownedOnly(
  r: Reconciler,
  deps: {
    /** This member's keys of the kind. */
    listOwned(): Promise<string[]>;
    /** The member holding the key's object, or undefined when its row is gone. */
    locationOf(key: string): Promise<string | undefined>;
    node: string;
    /** What this host still has of an object another member holds now (one that moved away) is removed. */
    release?(key: string, signal: AbortSignal): Promise<void>;
  },
): Reconciler {
  return {
    ...r,
    listKeys: deps.listOwned,
    async reconcile(key, ctx) {
      const at = await deps.locationOf(key);
      if (at !== undefined && at !== deps.node) {
        await deps.release?.(key, ctx.signal);
        return {};
      }
      return r.reconcile(key, ctx);
    },
  };
}

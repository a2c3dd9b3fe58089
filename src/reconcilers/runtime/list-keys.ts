/** Listing every key of some kinds, and queueing what was listed (the manager's sweeps and startup tiers). */
import type { Reconciler, RuntimeLogger } from './types.ts';

export type KeyLists = { kind: string; keys: string[] }[];

/** Every key of the given kinds (a kind whose listing fails is skipped, and said so). */
export async function listKeysOf(reconcilers: Reconciler[], reason: string, log: RuntimeLogger): Promise<KeyLists> {
  const lists = await Promise.all(
    reconcilers.map(async (r) => {
      try {
        return { kind: r.kind, keys: await r.listKeys() };
      } catch (err) {
        log.error({ err, kind: r.kind, reason }, 'listKeys failed; kind skipped in this sweep');
        return undefined;
      }
    }),
  );
  return lists.filter((l) => l !== undefined);
}

/** Queues what was listed, in one go (so that it coalesces with what is already waiting); `onKey` sees each. */
export function queueListed(
  lists: KeyLists,
  reason: string,
  to: {
    add(kind: string, key: string, reason: string): void;
    idOf(kind: string, key: string): string;
    log: RuntimeLogger;
  },
  onKey?: (id: string) => void,
): void {
  for (const { kind, keys } of lists) {
    for (const key of keys) {
      onKey?.(to.idOf(kind, key));
      to.add(kind, key, reason);
    }
    to.log.debug({ kind, reason, keys: keys.length }, 'keys enqueued');
  }
}

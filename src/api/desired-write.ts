import { leaveInFlight } from '../db/leave-in-flight.ts';
import type { Tx } from '../db/types.ts';
import type { OperationRow } from '../desired/schema/index.ts';
import { HostFailureError } from '../desired/errors.ts';
import type { OperationSpec } from '../operations/index.ts';
import type { ApiDeps } from './deps.ts';

type Target = { kind: string; key: string; generation: number };

/**
 * The async desired-write pattern: in one transaction write desired state (bumping its generation)
 * and record the operation that waits for that generation; after commit, announce the operation
 * and trigger the reconciler. A crash between commit and enqueue loses nothing: the startup sweep
 * reconciles every key.
 */
export async function writeWithOperation(
  deps: Pick<ApiDeps, 'db' | 'ops' | 'reconcile'>,
  write: (tx: Tx) => Promise<{ operation: Omit<OperationSpec, 'target'>; target: Target }>,
): Promise<OperationRow> {
  const { inserted, target } = await deps.db.transaction(async (tx) => {
    const { operation, target } = await write(tx);
    // The operation's insert is the last statement: COMMIT goes out behind it (one round trip less on a server).
    return { inserted: leaveInFlight(deps.ops.insert(tx, { ...operation, target })), target };
  });
  const row = await inserted;
  deps.ops.announce(row);
  deps.reconcile.enqueue(target.kind, target.key, 'desired write');
  return row;
}

/** How long a sync write that cannot be undone waits through the reconciler's retries (500 ms, 1 s, 2 s, 4 s ...). */
const RETRIES_MS = 10_000;

/**
 * The sync variant (endpoints the spec lists as sync): trigger the reconciler and wait until it
 * converged `generation`; on failure run `undo` (e.g. mark a half-created object for removal) and
 * answer with the reconciler's error. Without `undo` (a delete, a rename: the reconciler goes on with it
 * whatever the answer), a failure it retries is waited through for up to 10 s first, so a passing one (a
 * link another member removed first) is not answered as an error for a change that then happens.
 */
export async function awaitConverged(
  deps: Pick<ApiDeps, 'reconcile' | 'convergence'>,
  target: Target,
  undo?: () => Promise<void>,
): Promise<void> {
  const wait = deps.convergence.wait(
    target.kind,
    target.key,
    target.generation,
    undefined,
    undo ? {} : { retriesMs: RETRIES_MS },
  );
  deps.reconcile.enqueue(target.kind, target.key, 'desired write');
  const out = await wait;
  if (out.ok) return;
  if (undo) await undo().catch(() => {});
  throw new HostFailureError(out.error);
}

/**
 * The sync write of an object that has operations only for its async verbs (a container's PATCH): no
 * operation is made. The key is watched from before the transaction, so a convergence noted between
 * the commit and the wait counts without a read. The answer waits until the reconciler converged the
 * generation written, or failed terminally (it retries the other failures, as an operation waits
 * through them), or the client went away.
 */
export async function writeAndConverge(
  deps: Pick<ApiDeps, 'db' | 'reconcile' | 'convergence'>,
  kind: string,
  key: string,
  write: (tx: Tx) => Promise<{ generation: Promise<number> }>,
  signal?: AbortSignal,
): Promise<void> {
  const watch = deps.convergence.watch(kind, key);
  try {
    // The write may leave its last statement in flight (leave-in-flight.ts): COMMIT goes out behind it, and
    // its generation (or its error) is known once the transaction ended.
    const written = await deps.db.transaction(write);
    const generation = await written.generation;
    deps.reconcile.enqueue(kind, key, 'desired write');
    const out = await watch.until(generation, { terminalOnly: true, ...(signal ? { signal } : {}) });
    if (!out.ok) throw new HostFailureError(out.error);
  } finally {
    watch.close();
  }
}

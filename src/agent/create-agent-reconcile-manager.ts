/** The reconcile manager: the reconcilers, how a converged key is settled, and which kinds wait on which. */
import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { CONTAINER_KIND } from '../desired/containers.ts';
import { NETWORK_KIND, readNetworkById } from '../desired/networks.ts';
import { networkDependents } from '../desired/network-nics.ts';
import { poolDependents } from '../desired/pool-dependents.ts';
import { POOL_KIND } from '../desired/storage-pools.ts';
import { IMAGE_VOLUME_KIND, VOLUME_KIND } from '../desired/storage-volumes.ts';
import type { Operations } from '../operations/index.ts';
import type { Convergence } from '../reconcilers/convergence.ts';
import { type Clock, createReconcileManager, type Reconciler } from '../reconcilers/runtime/index.ts';
import { createStatusSettler } from '../reconcilers/status-settler.ts';

export function createAgentReconcileManager(input: {
  clock: Clock;
  reconcilers: Reconciler[];
  db: Db;
  recorded: Db;
  ops: Operations;
  convergence: Convergence;
  log: Logger;
  /** This member (its own status rows of pools and networks). */
  node: string;
  /** Whether the boot holds a container for its wave: its turn queues it, a pool or network converging does not. */
  heldForBoot?: (id: string) => boolean;
}) {
  const { clock, reconcilers, db, recorded, ops, convergence, log, node } = input;
  const containerKeys = (ids: string[]) =>
    ids.filter((key) => !input.heldForBoot?.(key)).map((key) => ({ kind: CONTAINER_KIND, key }));
  return createReconcileManager({
    clock,
    reconcilers,
    // Most reconcile time is spent waiting for host commands (lxc-start, tar, rsync): run many at once.
    concurrency: 16,
    settler: createStatusSettler({
      db: recorded,
      node,
      ops,
      convergence,
      notifyFirst: (kind) => kind === CONTAINER_KIND,
    }),
    log: log.child({ component: 'reconcile' }),
    // What is on a pool waits for it: reconciled at once when it converges, not at the next backoff.
    watches: [
      // Containers with a nic on a network wait for it: started (or their nics attached) once it converges.
      {
        kind: NETWORK_KIND,
        map: async (id) => {
          const row = await readNetworkById(db, id);
          return row ? containerKeys(await networkDependents(db, row.name)) : [];
        },
      },
      {
        kind: POOL_KIND,
        map: async (name) => {
          const on = await poolDependents(db, name);
          const as = (kind: string, keys: string[]) => keys.map((key) => ({ kind, key }));
          return [
            ...containerKeys(on.containers),
            ...as(VOLUME_KIND, on.customVolumes),
            ...as(IMAGE_VOLUME_KIND, on.imageVolumes),
          ];
        },
      },
    ],
  });
}

import type { Tx } from '../db/types.ts';
import { deleteContainerRuntime } from './container-runtime.ts';
import { deleteContainerRow } from './containers.ts';
import { deleteVolumeRow } from './storage-volumes.ts';

/**
 * The last step of a container's removal, after its teardown on the host: its root volume's row, its
 * runtime row and its own row (each by the module that owns the table), inside the settler's transaction,
 * which also deletes its status row and settles its operations (status-settler.ts): one commit; on
 * PostgreSQL BEGIN, the deletes and COMMIT go out together, pipelined on the transaction's connection
 * (leave-in-flight.ts). The container row is the level: while it is there the removal is retried, so the
 * others never outlive it.
 */
export function deleteContainerRows(tx: Tx, id: string): Promise<unknown> {
  return Promise.all([deleteVolumeRow(tx, id), deleteContainerRuntime(tx, id), deleteContainerRow(tx, id)]);
}

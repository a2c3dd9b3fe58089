import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { containerRuntime } from './schema/index.ts';

/** What a look at a container found (container_runtime): written by the container observer. */
export async function recordContainerRuntime(
  db: DbOrTx,
  id: string,
  values: { node: string; state: string; pid: number; startedAt: Date | null; observedAt: Date },
): Promise<void> {
  await db
    .insert(containerRuntime)
    .values({ id, ...values })
    .onConflictDoUpdate({ target: containerRuntime.id, set: values });
}

/** A removed container's runtime row (its removal's last transaction: delete-container-rows.ts). */
export async function deleteContainerRuntime(db: DbOrTx, id: string): Promise<void> {
  await db.delete(containerRuntime).where(eq(containerRuntime.id, id));
}

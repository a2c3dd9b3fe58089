import { eq, sql } from 'drizzle-orm';
import { excluded, preparedPer } from '../db/prepared.ts';
import type { DbOrTx } from '../db/types.ts';
import { containerRuntime } from './schema/index.ts';

const runtimeValues = {
  node: sql.placeholder('node'),
  state: sql.placeholder('state'),
  pid: sql.placeholder('pid'),
  // Raw, not through the column's encoder: drizzle encodes a placeholder's value without a null check, and this
  // one is null for a container seen stopped (filled with the ISO text or null).
  startedAt: sql`${sql.placeholder('startedAt')}`,
  observedAt: sql.placeholder('observedAt'),
};
const upsertRuntime = preparedPer((db: DbOrTx) =>
  db
    .insert(containerRuntime)
    .values({ id: sql.placeholder('id'), ...runtimeValues })
    .onConflictDoUpdate({
      target: containerRuntime.id,
      set: {
        node: excluded(containerRuntime.node),
        state: excluded(containerRuntime.state),
        pid: excluded(containerRuntime.pid),
        startedAt: excluded(containerRuntime.startedAt),
        observedAt: excluded(containerRuntime.observedAt),
      },
    })
    .prepare('container_runtime_upsert'),
);

/** What a look at a container found (container_runtime): written by the container observer. */
export async function recordContainerRuntime(
  db: DbOrTx,
  id: string,
  values: { node: string; state: string; pid: number; startedAt: Date | null; observedAt: Date },
): Promise<void> {
  await upsertRuntime(db).execute({ id, ...values, startedAt: values.startedAt?.toISOString() ?? null });
}

/** A removed container's runtime row (its removal's last transaction: delete-container-rows.ts). */
export async function deleteContainerRuntime(db: DbOrTx, id: string): Promise<void> {
  await db.delete(containerRuntime).where(eq(containerRuntime.id, id));
}

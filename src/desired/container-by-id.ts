import { eq, sql } from 'drizzle-orm';
import { preparedPer } from '../db/prepared.ts';
import type { DbOrTx } from '../db/types.ts';
import { type ContainerRow, containers } from './schema/index.ts';

/** Every container reconcile reads its row first (prepared.ts). */
const containerById = preparedPer((db: DbOrTx) =>
  db
    .select()
    .from(containers)
    .where(eq(containers.id, sql.placeholder('id')))
    .prepare('container_by_id'),
);

export async function readContainerById(db: DbOrTx, id: string): Promise<ContainerRow | undefined> {
  const [row] = await containerById(db).execute({ id });
  return row;
}

import type { DbOrTx } from '../db/types.ts';
import { expandStoredContainer, readContainerById } from '../desired/containers.ts';
import type { ContainerRow } from '../desired/schema/index.ts';

export interface Guest {
  row: ContainerRow;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

/** A container as its guest sees it: its row and expanded config/devices, read now (undefined once it is being deleted). */
export async function readGuest(db: DbOrTx, id: string): Promise<Guest | undefined> {
  const row = await readContainerById(db, id);
  if (!row || row.deletingAt) return undefined;
  return { row, ...(await expandStoredContainer(db, row)) };
}

import { eq } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { readContainerById } from '../desired/containers.ts';
import { expandConfig } from '../desired/expand.ts';
import { profileProjectOf, readProject } from '../desired/projects.ts';
import { profiles, type ContainerRow } from '../desired/schema/index.ts';

export interface Guest {
  row: ContainerRow;
  config: Record<string, string>;
  devices: Record<string, Record<string, string>>;
}

/** A container as its guest sees it: its row and expanded config/devices, read now (undefined once it is being deleted). */
export async function readGuest(db: DbOrTx, id: string): Promise<Guest | undefined> {
  const row = await readContainerById(db, id);
  if (!row || row.deletingAt) return undefined;
  const profileProject = row.project === 'default' ? 'default' : profileProjectOf(await readProject(db, row.project));
  const rows = row.profiles.length ? await db.select().from(profiles).where(eq(profiles.project, profileProject)) : [];
  const byName = new Map(rows.map((p) => [p.name, p]));
  const { config, devices } = expandConfig(row.profiles.map((n) => byName.get(n)).filter((p) => p !== undefined), row);
  return { row, config, devices };
}

import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { readDataVersion } from '../desired/data-versions.ts';
import { containerRuntime, containers, type ContainerRow } from '../desired/schema/index.ts';

type RuntimeRow = typeof containerRuntime.$inferSelect;

/** The rows a periodic sample of every container compares with the host. */
export interface SampleRows {
  /** This member's containers not being deleted. */
  rows: ContainerRow[];
  /** This node's runtime rows. */
  runtime: RuntimeRow[];
}

/**
 * The container observer's rows for a sample, read again only when the containers or runtime tables
 * were written since the last read (readDataVersion: no query, on the embedded database as on a
 * server). With N idle containers a tick then reads nothing, where it read
 * 2×N rows (~24 ms of CPU on PGlite with 1000). The arrays returned are shared: callers do not change them.
 */
export function createSampleRows(deps: { db: Db; node: string }): () => Promise<SampleRows> {
  let last: (SampleRows & { version: string }) | undefined;
  return async () => {
    // Read before the rows: a write in between only makes the next sample read them again.
    const version = await readDataVersion(deps.db, ['containers', 'container_runtime']);
    if (last?.version === version) return last;
    const [rows, runtime] = await Promise.all([
      deps.db
        .select()
        .from(containers)
        .where(and(isNull(containers.deletingAt), eq(containers.location, deps.node))),
      deps.db.select().from(containerRuntime).where(eq(containerRuntime.node, deps.node)),
    ]);
    last = { version, rows, runtime };
    return last;
  };
}

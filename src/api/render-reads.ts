import type { DbOrTx } from '../db/types.ts';
import { standingReader } from '../desired/runtime-reads.ts';
import { usedByReader } from '../desired/used-by.ts';
import { lazy } from '../util/lazy.ts';
import type { ApiDeps } from './deps.ts';

/**
 * What one render of pools or networks reads besides their rows: each table once (used-by, reconcile status,
 * the observers' runtime rows, the members), however many it renders.
 */
export function renderReads(db: DbOrTx, cluster: ApiDeps['cluster']) {
  return {
    usedBy: usedByReader(db),
    standing: standingReader(db),
    /** The cluster's members, or undefined when not clustered. */
    members: lazy(async () => {
      if (!cluster || !(await cluster.clustered())) return undefined;
      return (await cluster.members()).map((m) => m.name);
    }),
  };
}
export type RenderReads = ReturnType<typeof renderReads>;

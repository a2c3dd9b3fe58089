import type { Context } from 'hono';
import type { DbOrTx } from '../db/types.ts';
import { NotFoundError, ValidationError } from '../desired/errors.ts';
import { standingReader } from '../desired/runtime-reads.ts';
import { usedByReader } from '../desired/used-by.ts';
import type { AppEnv } from './context.ts';
import type { ApiDeps } from './deps.ts';

/**
 * `?target=<member>` of a pool or network request, with the cluster's members (none on a standalone server):
 * a 400 on a standalone server, a 404 for a member the cluster does not have.
 */
export async function clusterTargetOf(
  c: Context<AppEnv>,
  cluster: ApiDeps['cluster'],
): Promise<{ target: string | undefined; members: string[] }> {
  const target = c.req.query('target') || undefined;
  const clustered = !!cluster && (await cluster.clustered());
  const members = clustered ? (await cluster!.members()).map((m) => m.name) : [];
  if (target && !clustered) throw new ValidationError('This server is not clustered: "target" names a cluster member');
  if (target && !members.includes(target)) throw new NotFoundError(`Cluster member "${target}" not found`);
  return { target, members };
}

/**
 * What one render of pools or networks reads besides their rows: each table once (used-by, reconcile status,
 * the observers' runtime rows, the members), however many it renders.
 */
export function renderReads(db: DbOrTx, cluster: ApiDeps['cluster']) {
  let members: Promise<string[] | undefined> | undefined;
  return {
    usedBy: usedByReader(db),
    standing: standingReader(db),
    /** The cluster's members, or undefined when not clustered. */
    members: () =>
      (members ??= (async () => {
        if (!cluster || !(await cluster.clustered())) return undefined;
        return (await cluster.members()).map((m) => m.name);
      })()),
  };
}
export type RenderReads = ReturnType<typeof renderReads>;

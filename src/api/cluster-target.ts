import type { Context } from 'hono';
import { NotFoundError, ValidationError } from '../desired/errors.ts';
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

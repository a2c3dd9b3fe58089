import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { ForbiddenError, ValidationError } from '../../desired/errors.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async } from '../envelope.ts';
import { route } from '../router.ts';

const MoveInBody = v.object({
  id: v.string(),
  from: v.string(),
  generation: v.number(),
  operation: v.string(),
  secrets: stringMap,
  certificate: v.string(),
});

/**
 * `POST /1.0/containers/<name>?target=<member>` with `migration: true`: a move to another member, served by
 * the member holding the container (the forwarder brings it there). LXD treats an absent `live` as true.
 */
export async function moveContainerToMember(
  c: Context<AppEnv>,
  deps: ApiDeps,
  cur: ContainerRow,
  target: string,
  body: { name?: string | undefined; live?: boolean | undefined },
): Promise<Response> {
  if (!deps.moves) throw new ValidationError('This server cannot cluster: "target" names a cluster member');
  return async(c, await deps.moves.move(cur, target, { live: body.live ?? true, name: body.name }));
}

/** The receiving side of a move, called only by the member the container leaves (the cluster certificate). */
export function registerContainerMoveRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  route(app, '/internal/cluster/move-in', {
    POST: async (c) => {
      const cert = deps.cluster?.certificate();
      if (!cert || c.get('caller').fingerprint !== cert.fingerprint)
        throw new ForbiddenError('Only a cluster member may move a container to this member');
      const body = await readJson(c, MoveInBody);
      return async(c, await deps.migration.receiveMovedContainer(body));
    },
  });
}

import type { Hono } from 'hono';
import * as v from 'valibot';
import { ValidationError } from '../../desired/errors.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { route } from '../router.ts';

const PutBody = v.object({
  server_name: optionalString,
  enabled: v.optional(v.boolean('expected a boolean')),
  server_address: optionalString,
  cluster_address: optionalString,
  cluster_certificate: optionalString,
  cluster_password: optionalString,
  member_config: v.optional(v.array(v.unknown(), 'expected a list')),
});

/**
 * `/1.0/cluster` on a server that is not clustered (clustering is not built, so the `clustering`
 * extension is not announced): GET describes this standalone member to trusted and untrusted callers;
 * PUT accepts only what changes nothing (`{enabled: false}`) and refuses bootstrap and join clearly.
 */
export function registerClusterRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { node } = deps;
  route(app, '/1.0/cluster', {
    GET: { auth: 'untrusted', handler: (c) => sync(c, { server_name: node, enabled: false, member_config: [] }) },
    PUT: async (c) => {
      const body = await readJson(c, PutBody);
      if (body.enabled)
        throw new ValidationError('Clustering is not supported by this server: it cannot bootstrap or join a cluster');
      if (body.server_name && body.server_name !== node)
        throw new ValidationError(
          `Clustering is not supported by this server: its name stays "${node}" (set SVCD_NODE_NAME to change it)`,
        );
      const joinFields = (
        ['server_address', 'cluster_address', 'cluster_certificate', 'cluster_password'] as const
      ).filter((k) => body[k]);
      if (joinFields.length > 0 || (body.member_config?.length ?? 0) > 0)
        throw new ValidationError(
          `Clustering is not supported by this server: ${[...joinFields, ...(body.member_config?.length ? ['member_config'] : [])].join(', ')} cannot be applied to a standalone server`,
        );
      // {enabled: false} on a server that is not clustered: nothing to do.
      return sync(c, {});
    },
  });
}

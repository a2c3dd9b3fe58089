import type { Hono } from 'hono';
import * as v from 'valibot';
import type { MemberView } from '../../cluster/members.ts';
import { ValidationError } from '../../desired/errors.ts';
import { parseBool } from '../../util/parse-bool.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, sync } from '../envelope.ts';
import { recursionOf } from '../query.ts';
import { param, route } from '../router.ts';

const PutBody = v.object({
  server_name: optionalString,
  enabled: v.optional(v.boolean('expected a boolean')),
  server_address: optionalString,
  cluster_address: optionalString,
  cluster_certificate: optionalString,
  cluster_password: optionalString,
  member_config: v.optional(v.array(v.unknown(), 'expected a list')),
});
const RenameBody = v.object({ server_name: optionalString });
const AcceptBody = v.object({
  server_name: optionalString,
  server_address: optionalString,
  password: optionalString,
  // The joiner runs on the embedded engine (it can move onto a cluster's embedded database).
  embedded: v.optional(v.boolean()),
  member_config: v.optional(v.array(v.unknown(), 'expected a list')),
});

const memberUrl = (name: string) => `/1.0/cluster/members/${encodeURIComponent(name)}`;

/** A member as lxc reads it (server_name, status) and as the spec names it (name, state). */
export function renderMember(m: MemberView) {
  const status = m.online ? 'Online' : 'Offline';
  return {
    server_name: m.name,
    name: m.name,
    url: `https://${m.address}`,
    // Every member reads and writes the one PostgreSQL database; none leads.
    database: true,
    roles: m.roles,
    architecture: m.architecture,
    failure_domain: 'default',
    description: m.description,
    config: {},
    groups: [],
    status,
    state: status,
    message: m.online ? 'Fully operational' : `No heartbeat since ${m.heartbeatAt.toISOString()}`,
    last_seen: m.heartbeatAt.toISOString(),
  };
}

/**
 * `/1.0/cluster` and its members. Without a cluster service (a component test's app) or before bootstrap, GET
 * describes this standalone server; PUT bootstraps, joins (same database: DATABASE_URL) or leaves.
 */
export function registerClusterRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { node, cluster } = deps;
  // A completed operation: lxc waits on one for PUT /1.0/cluster; the work itself was done (or refused) before.
  const done = async (description: string) => {
    const op = await deps.ops.startTask({ class: 'task', description, project: 'default' }, async () => {});
    // A change of where this member's database is restarts the agent: after the operation is made.
    cluster?.restartIfPending();
    return op;
  };
  route(app, '/1.0/cluster', {
    GET: {
      auth: 'untrusted',
      handler: async (c) =>
        sync(c, cluster ? await cluster.info() : { server_name: node, enabled: false, member_config: [] }),
    },
    PUT: async (c) => {
      const body = await readJson(c, PutBody);
      if (!cluster) {
        if (body.enabled) throw new ValidationError('Clustering is not supported by this server');
        return sync(c, {});
      }
      if (body.server_name && body.server_name !== node)
        throw new ValidationError(
          `Invalid "server_name": this member's name stays "${node}" (set SVCD_NODE_NAME to change it)`,
        );
      if (body.enabled === false) {
        const given = (
          ['server_address', 'cluster_address', 'cluster_certificate', 'cluster_password'] as const
        ).filter((k) => body[k]);
        if (given.length)
          throw new ValidationError(`Invalid ${given.map((k) => `"${k}"`).join(', ')}: not used to leave a cluster`);
        // Not clustered: nothing to do.
        if (!(await cluster.clustered())) return sync(c, {});
        await cluster.leave();
        return async(c, await done('Disabling clustering'));
      }
      if (!body.enabled) throw new ValidationError('Invalid "enabled": true to bootstrap or join, false to leave');
      if (body.cluster_address) {
        const moved = await cluster.join(body);
        // Joined onto another member's database: this agent restarted on it, so the operation is the new
        // agent's (one of the old would not be found there); the join is complete when it is answered.
        if (moved)
          return async(
            c,
            await moved.ops.startTask(
              { class: 'task', description: 'Joining cluster', project: 'default' },
              async () => {},
            ),
          );
        return async(c, await done('Joining cluster'));
      }
      const joinOnly = (['cluster_certificate', 'cluster_password'] as const).filter((k) => body[k]);
      if (joinOnly.length)
        throw new ValidationError(`Invalid "cluster_address": required to join (${joinOnly.join(', ')} given)`);
      await cluster.bootstrap(body);
      return async(c, await done('Creating bootstrap node'));
    },
  });
  route(app, '/1.0/cluster/members', {
    GET: async (c) => {
      const members = cluster && (await cluster.clustered()) ? await cluster.members() : [];
      return sync(c, recursionOf(c) ? members.map(renderMember) : members.map((m) => memberUrl(m.name)));
    },
  });
  const need = () => {
    if (!cluster) throw new ValidationError('This server is not clustered');
    return cluster;
  };
  route(app, '/1.0/cluster/members/:name', {
    GET: async (c) => sync(c, renderMember(await need().member(param(c, 'name')))),
    POST: async (c) => {
      const body = await readJson(c, RenameBody);
      await need().rename(param(c, 'name'), body.server_name ?? '');
      return sync(c, {});
    },
    DELETE: async (c) => {
      const svc = need();
      const name = param(c, 'name');
      const m = await svc.member(name);
      // An online member removes itself (it checks it holds nothing); a dead one is removed here, with force.
      if (name !== node && m.online) {
        const res = await svc.callMember(name, 'DELETE', memberUrl(name));
        return new Response(res.body, { status: res.status, headers: { 'content-type': 'application/json' } });
      }
      await svc.remove(name, parseBool(c.req.query('force')));
      return async(c, await done('Removing member from cluster'));
    },
  });
  // The bootstrap side of a join: the joiner presents its own certificate (untrusted) and the trust password.
  route(app, '/internal/cluster/accept', {
    POST: {
      auth: 'untrusted',
      handler: async (c) => {
        const body = await readJson(c, AcceptBody);
        return sync(c, await need().accept(body));
      },
    },
  });
}

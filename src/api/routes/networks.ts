import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { mergeConfig } from '../../desired/config-keys.ts';
import { NotFoundError, StaleWriteError, ValidationError } from '../../desired/errors.ts';
import { standingOf } from '../../desired/member-status.ts';
import {
  insertNetwork,
  listNetworks,
  markNetworkDeleting,
  mergeLeases,
  NETWORK_KIND,
  networkDir,
  prepareNetwork,
  prepareNetworkUpdate,
  readNetwork,
  renameNetwork,
  staticLeases,
  updateNetwork,
} from '../../desired/networks.ts';
import type { NetworkRow } from '../../desired/schema/index.ts';
import { emitLifecycle } from '../../events/index.ts';
import { optionalString, readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { clusterTargetOf } from '../cluster-target.ts';
import { renderReads, type RenderReads } from '../render-reads.ts';
import { awaitConverged } from '../desired-write.ts';
import { defineNetworkOnMember, deletePendingNetwork, finishPendingNetwork } from '../../desired/network-pending.ts';
import { renamedResponse, sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import type { HostInterface } from '../host-service.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const CreateBody = v.object({
  name: v.string('expected a string'),
  type: optionalString,
  description: optionalString,
  config: v.optional(stringMap),
});
const UpdateBody = v.object({ description: optionalString, config: v.optional(stringMap) });
const RenameBody = v.object({ name: v.string('expected a string') });

export const networkUrl = (name: string) => `/1.0/networks/${encodeURIComponent(name)}`;
const editable = (n: { description: string; config: Record<string, string> }) => ({
  description: n.description,
  config: n.config,
});

/** One entry of the list: a managed network, or a host interface svcd does not manage. */
type Listed = { managed: NetworkRow } | { host: HostInterface };
const nameOf = (l: Listed) => ('managed' in l ? l.managed.name : l.host.name);

export function registerNetworkRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus, networks: host } = deps;

  const readsFor = () => renderReads(db, deps.cluster);

  /** Created once the reconciler converged it, Errored (with why) when its last reconcile failed. */
  async function statusOf(
    n: NetworkRow,
    on: { missing: string[] } | undefined,
    reads: RenderReads,
  ): Promise<{ status: string; status_detail: string }> {
    if (n.pending) return { status: 'Pending', status_detail: `defined on ${Object.keys(n.memberConfig).join(', ')}` };
    const st = standingOf(await reads.standing.networkStatus(n.id), on !== undefined);
    if (st.error) return { status: 'Errored', status_detail: st.error };
    if (!st.converged) return { status: 'Pending', status_detail: '' };
    if (on?.missing.length) return { status: 'Pending', status_detail: `not yet on ${on.missing.join(', ')}` };
    return { status: 'Created', status_detail: '' };
  }
  /** In a cluster: the members whose host shows the network up (network_runtime), and those where it is not (yet). */
  async function membersHaving(
    id: string,
    reads: RenderReads,
  ): Promise<{ ready: string[]; missing: string[] } | undefined> {
    const [members, rows] = await Promise.all([reads.members(), reads.standing.networkRuntimes(id)]);
    if (!members) return undefined;
    const up = new Set(rows.filter((r) => r.ready).map((r) => r.node));
    return { ready: members.filter((m) => up.has(m)), missing: members.filter((m) => !up.has(m)) };
  }
  /** `target`: a member's view, its own keys (bridge.external_interfaces) in the config. */
  const render = async (l: Listed, reads: RenderReads = readsFor(), target?: string) => {
    if ('host' in l)
      return {
        name: l.host.name,
        description: '',
        type: l.host.type,
        managed: false,
        config: {},
        used_by: await reads.usedBy.network(l.host.name),
        status: '',
        locations: [],
      };
    const n = l.managed;
    // Read once for both the status and the locations.
    const on = n.pending ? undefined : await membersHaving(n.id, reads);
    return {
      name: n.name,
      description: n.description,
      type: n.type,
      managed: true,
      config: target ? { ...n.config, ...n.memberConfig[target] } : n.config,
      used_by: await reads.usedBy.network(n.name),
      ...(await statusOf(n, on, reads)),
      locations: n.pending ? Object.keys(n.memberConfig).sort() : (on?.ready ?? ['none']),
    };
  };
  const lifecycle = (action: string, name: string, context: Record<string, unknown> = {}) =>
    emitLifecycle(bus, { action: `network-${action}`, source: networkUrl(name), context });

  /** A managed network that is not being deleted, or undefined. */
  const managedNetwork = async (name: string) => {
    const n = await readNetwork(db, name).catch((e: unknown) =>
      e instanceof NotFoundError ? undefined : Promise.reject(e),
    );
    return n && !n.deletingAt ? n : undefined;
  };
  /** A managed network or a host interface by name (404 when neither). */
  const lookup = async (name: string): Promise<Listed> => {
    const n = await managedNetwork(name);
    if (n) return { managed: n };
    const iface = (await host.interfaces()).find((i) => i.name === name);
    if (iface) return { host: iface };
    throw new NotFoundError(`Network "${name}" not found`);
  };
  /** A managed network by name: a host interface is a 400, anything else a 404. */
  const managed = async (name: string): Promise<NetworkRow> => {
    const l = await lookup(name);
    if ('host' in l) throw new ValidationError(`Network "${name}" is not a managed network`);
    return l.managed;
  };

  /** A managed network that is on the hosts: a pending one (defined on some members only) is a 400. */
  const created = async (name: string): Promise<NetworkRow> => {
    const n = await managed(name);
    if (n.pending)
      throw new ValidationError(
        `Network "${name}" is pending: it is defined on some members only (create it without target to finish)`,
      );
    return n;
  };

  route(app, '/1.0/networks', {
    GET: async (c) => {
      const rows = (await listNetworks(db)).filter((n) => !n.deletingAt);
      const names = new Set(rows.map((n) => n.name));
      const hostOnly = (await host.interfaces()).filter((i) => !names.has(i.name));
      const all: Listed[] = [...rows.map((managed) => ({ managed })), ...hostOnly.map((h) => ({ host: h }))].sort(
        (a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0),
      );
      const reads = readsFor();
      return sync(
        c,
        await renderCollection(c, all, { url: (l) => networkUrl(nameOf(l)), render: (l) => render(l, reads) }),
      );
    },
    POST: async (c) => {
      const body = await readJson(c, CreateBody);
      const { target, members } = await clusterTargetOf(c, deps.cluster);
      c.header('Location', networkUrl(body.name));
      // In a cluster, LXD's two steps: defined member by member, then created on all (desired/network-pending.ts).
      if (target) {
        await defineNetworkOnMember(db, body, target);
        return sync(c, {});
      }
      const finished = members.length ? await finishPendingNetwork(db, body, members, host) : undefined;
      const row = finished ?? (await insertNetwork(db, await prepareNetwork(db, body, host)));
      // Sync endpoint over the reconciler: wait for the host; on failure tear down whatever was made.
      await awaitConverged(deps, { kind: NETWORK_KIND, key: row.id, generation: row.generation }, async () => {
        const gone = await markNetworkDeleting(db, row.id);
        await awaitConverged(deps, { kind: NETWORK_KIND, key: row.id, generation: gone.generation });
      });
      lifecycle('created', row.name);
      return sync(c, {});
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const name = param(c, 'name');
    const body = await readJson(c, UpdateBody);
    let cur!: NetworkRow;
    // Check, merge, validate and write as one step: the write is conditional on the generation read.
    const row = await checkedWrite(
      c.req.header('if-match'),
      () => created(name),
      (n) => computeEtag(editable(n)),
      async (n) => {
        cur = n;
        const config = await prepareNetworkUpdate(
          db,
          n,
          replace ? mergeConfig({}, body.config) : mergeConfig(n.config, body.config),
          host,
        );
        return updateNetwork(
          db,
          n.id,
          { description: body.description ?? (replace ? '' : n.description), config },
          n.generation,
        );
      },
    );
    // A change the host refused must not stay desired: put the previous config back (unless changed since).
    await awaitConverged(deps, { kind: NETWORK_KIND, key: row.id, generation: row.generation }, async () => {
      const back = await updateNetwork(db, row.id, editable(cur), row.generation).catch((e: unknown) =>
        e instanceof StaleWriteError || e instanceof NotFoundError ? undefined : Promise.reject(e),
      );
      if (back) await awaitConverged(deps, { kind: NETWORK_KIND, key: back.id, generation: back.generation });
    });
    lifecycle('updated', row.name);
    return sync(c, {});
  };

  route(app, '/1.0/networks/:name', {
    GET: async (c) => {
      const l = await lookup(param(c, 'name'));
      const { target } = await clusterTargetOf(c, deps.cluster);
      return sync(c, await render(l, readsFor(), target), {
        etag: computeEtag('managed' in l ? editable(l.managed) : { description: '', config: {} }),
      });
    },
    PUT: update(true),
    PATCH: update(false),
    POST: async (c) => {
      const n = await created(param(c, 'name'));
      const { name: newName } = await readJson(c, RenameBody);
      const row = await renameNetwork(db, n.id, newName, host);
      await awaitConverged(deps, { kind: NETWORK_KIND, key: row.id, generation: row.generation });
      lifecycle('renamed', row.name, { old_name: n.name });
      return renamedResponse(c, networkUrl(row.name));
    },
    DELETE: async (c) => {
      const n = await managed(param(c, 'name'));
      if (await deletePendingNetwork(db, n.name)) {
        lifecycle('deleted', n.name);
        return sync(c, {});
      }
      const row = await markNetworkDeleting(db, n.id);
      await awaitConverged(deps, { kind: NETWORK_KIND, key: row.id, generation: row.generation });
      lifecycle('deleted', row.name);
      return sync(c, {});
    },
  });

  route(app, '/1.0/networks/:name/state', {
    GET: async (c) => {
      const name = param(c, 'name');
      const st = await host.state(name);
      if (!st) throw new NotFoundError(`Network "${name}" not found`);
      return sync(c, st);
    },
  });

  route(app, '/1.0/networks/:name/leases', {
    GET: async (c) => {
      const n = await managed(param(c, 'name'));
      const [statics, dynamic] = await Promise.all([
        staticLeases(db, n.name),
        host.leases({ name: n.name, dir: networkDir(deps.stateDir, n.name) }),
      ]);
      return sync(c, mergeLeases(statics, dynamic));
    },
  });
}

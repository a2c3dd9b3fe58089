import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { mergeConfig } from '../../desired/config-keys.ts';
import { HostFailureError, NotFoundError } from '../../desired/errors.ts';
import { standingOf } from '../../desired/member-status.ts';
import {
  definePoolOnMember,
  deletePendingPool,
  finishPendingPool,
  requireUsablePool,
} from '../../desired/pool-pending.ts';
import { readPoolRuntime } from '../../desired/runtime-reads.ts';
import type { StoragePoolRow } from '../../desired/schema/index.ts';
import {
  insertPool,
  listPools,
  markPoolDeleting,
  POOL_KIND,
  preparePool,
  readPool,
  revertPool,
  updatePool,
} from '../../desired/storage-pools.ts';
import { emitLifecycle } from '../../events/index.ts';
import { optionalString, readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { clusterTargetOf } from '../cluster-target.ts';
import { renderReads, type RenderReads } from '../render-reads.ts';
import { awaitConverged } from '../desired-write.ts';
import { sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const CreateBody = v.object({
  name: v.string('expected a string'),
  driver: v.string('expected a string'),
  description: optionalString,
  config: v.optional(stringMap),
});
const UpdateBody = v.object({ description: optionalString, config: v.optional(stringMap) });

export const poolUrl = (name: string) => `/1.0/storage-pools/${encodeURIComponent(name)}`;
const editable = (p: StoragePoolRow) => ({ description: p.description, config: p.config });

export function registerStoragePoolRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus, node } = deps;

  const readsFor = () => renderReads(db, deps.cluster);

  /** Status from what the host shows (observer) and how the last reconcile went. */
  async function statusOf(
    p: StoragePoolRow,
    on: { missing: string[] } | undefined,
    reads: RenderReads,
  ): Promise<{ status: string; status_detail: string }> {
    if (p.deletingAt) return { status: 'Deleting', status_detail: '' };
    if (p.pending) return { status: 'Pending', status_detail: `defined on ${Object.keys(p.memberConfig).join(', ')}` };
    const [rt, rows] = await Promise.all([reads.standing.poolRuntime(node, p.name), reads.standing.poolStatus(p.name)]);
    const st = standingOf(rows, on !== undefined);
    if (st.error) return { status: 'Unavailable', status_detail: st.error };
    if (rt && !rt.ready) return { status: 'Unavailable', status_detail: rt.problem };
    if (!st.converged) return { status: 'Pending', status_detail: '' };
    if (on?.missing.length) return { status: 'Pending', status_detail: `not yet on ${on.missing.join(', ')}` };
    return { status: 'Created', status_detail: '' };
  }
  /** In a cluster: the members whose host shows the pool ready, and those where it is not (yet). */
  async function membersHaving(
    pool: string,
    reads: RenderReads,
  ): Promise<{ ready: string[]; missing: string[] } | undefined> {
    const members = await reads.members();
    if (!members) return undefined;
    const ready = await Promise.all(
      members.map(async (m) => (await reads.standing.poolRuntime(m, pool))?.ready === true),
    );
    return { ready: members.filter((_, i) => ready[i]), missing: members.filter((_, i) => !ready[i]) };
  }
  /** `target`: a member's view, its own keys (source, size) in the config. */
  const render = async (p: StoragePoolRow, reads: RenderReads = readsFor(), target?: string) => {
    // Read once for both the status and the locations.
    const on = p.pending ? undefined : await membersHaving(p.name, reads);
    return {
      name: p.name,
      description: p.description,
      driver: p.driver,
      config: target ? { ...p.config, ...p.memberConfig[target] } : p.config,
      used_by: await reads.usedBy.pool(p.name),
      ...(await statusOf(p, on, reads)),
      locations: p.pending ? Object.keys(p.memberConfig).sort() : (on?.ready ?? ['none']),
    };
  };
  const targetOf = (c: Context<AppEnv>) => clusterTargetOf(c, deps.cluster);
  const lifecycle = (action: string, name: string) =>
    emitLifecycle(bus, { action: `storage-pool-${action}`, source: poolUrl(name) });
  /** A live (not deleting) pool. */
  const livePool = async (name: string) => {
    const p = await readPool(db, name);
    if (p.deletingAt) throw new NotFoundError(`Storage pool "${name}" not found`);
    return p;
  };

  route(app, '/1.0/storage-pools', {
    GET: async (c) => {
      const reads = readsFor();
      return sync(
        c,
        await renderCollection(
          c,
          (await listPools(db)).filter((p) => !p.deletingAt),
          { url: (p) => poolUrl(p.name), render: (p) => render(p, reads) },
        ),
      );
    },
    POST: async (c) => {
      const body = await readJson(c, CreateBody);
      const { target, members } = await targetOf(c);
      c.header('Location', poolUrl(body.name));
      // In a cluster, LXD's two steps: defined member by member, then created on all (desired/pool-pending.ts).
      if (target) {
        await definePoolOnMember(db, body, target, deps.storage.probeDriver);
        return sync(c, {});
      }
      const finished = members.length
        ? await finishPendingPool(db, deps.stateDir, body, members, deps.storage.probeDriver)
        : undefined;
      const row =
        finished ?? (await insertPool(db, body, await preparePool(db, deps.stateDir, body, deps.storage.probeDriver)));
      // Sync endpoint over the reconciler: wait for the host; on failure tear down whatever was made.
      await awaitConverged(deps, { kind: POOL_KIND, key: row.name, generation: row.generation }, async () => {
        const gone = await markPoolDeleting(db, row.name);
        await awaitConverged(deps, { kind: POOL_KIND, key: row.name, generation: gone.generation });
      });
      lifecycle('created', row.name);
      return sync(c, {});
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const name = param(c, 'name');
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the write is conditional on the generation read.
    let cur!: StoragePoolRow;
    const row = await checkedWrite(
      c.req.header('if-match'),
      async () => requireUsablePool(await livePool(name)),
      (p) => computeEtag(editable(p)),
      (p) => {
        cur = p;
        return updatePool(
          db,
          p.name,
          {
            description: body.description ?? (replace ? '' : p.description),
            config: replace ? mergeConfig({}, body.config) : mergeConfig(p.config, body.config),
          },
          p.generation,
        );
      },
    );
    // On failure put the previous config back: a refused change (say, growing past what the host
    // allows) must not leave the pool stuck unavailable with a size it can never shrink back from.
    await awaitConverged(deps, { kind: POOL_KIND, key: row.name, generation: row.generation }, async () => {
      const back = await revertPool(db, row.name, row.generation, editable(cur));
      if (back) await awaitConverged(deps, { kind: POOL_KIND, key: back.name, generation: back.generation });
    });
    lifecycle('updated', row.name);
    return sync(c, {});
  };

  route(app, '/1.0/storage-pools/:name', {
    GET: async (c) => {
      const p = await livePool(param(c, 'name'));
      const { target } = await targetOf(c);
      return sync(c, await render(p, readsFor(), target), { etag: computeEtag(editable(p)) });
    },
    PUT: update(true),
    PATCH: update(false),
    DELETE: async (c) => {
      await livePool(param(c, 'name'));
      if (await deletePendingPool(db, param(c, 'name'))) {
        lifecycle('deleted', param(c, 'name'));
        return sync(c, {});
      }
      const row = await markPoolDeleting(db, param(c, 'name'));
      await awaitConverged(deps, { kind: POOL_KIND, key: row.name, generation: row.generation });
      lifecycle('deleted', row.name);
      return sync(c, {});
    },
  });

  route(app, '/1.0/storage-pools/:name/resources', {
    GET: async (c) => {
      const p = await livePool(param(c, 'name'));
      const rt = await readPoolRuntime(db, node, p.name);
      if (!rt) throw new HostFailureError(`Storage pool "${p.name}" has not been observed yet`);
      if (!rt.ready) throw new HostFailureError(`Storage pool "${p.name}" is unavailable: ${rt.problem}`);
      return sync(c, {
        space: { used: rt.spaceUsed, total: rt.spaceTotal },
        inodes: { used: rt.inodesUsed, total: rt.inodesTotal },
      });
    },
  });
}

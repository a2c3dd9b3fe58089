import type { Context, Hono } from 'hono';
import { mergeConfig } from '../../desired/config-keys.ts';
import { leaveInFlight } from '../../db/leave-in-flight.ts';
import {
  bumpContainer,
  bumpContainerAtInFlight,
  CONTAINER_KIND,
  containerUrl,
  listContainers,
  markContainerDeletingByName,
  readContainer,
  splitVolatile,
  validateContainer,
  type ContainerInput,
} from '../../desired/containers.ts';
import { ValidationError } from '../../desired/errors.ts';
import { checkContainerProxies } from '../../desired/proxy-checks.ts';
import { validateContainerName } from '../../desired/names.ts';
import { cachedProfiles, cachedProject } from '../../desired/cached-reads.ts';
import { profileProjectOf, readProject } from '../../desired/projects.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { readJson } from '../body.ts';
import { requestSignal } from '../request-signal.ts';
import type { Tx } from '../../db/types.ts';
import type { AppEnv } from '../context.ts';
import { targetOf } from '../migration-bodies.ts';
import type { ApiDeps } from '../deps.ts';
import { writeAndConverge, writeWithOperation } from '../desired-write.ts';
import { async, sync, syncRaw } from '../envelope.ts';
import { createVersionedReads } from '../../util/versioned-cache.ts';
import { readDataVersion } from '../../desired/data-versions.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { recursionOf } from '../query.ts';
import { compileFilter } from '../filter.ts';
import { param } from '../router.ts';
import { collectionOf, instanceRoute, instanceTypeListed } from '../instance-collection.ts';
import { renderContainers } from './containers-render.ts';
import { registerContainerSnapshotRoutes, renderSnapshot } from './container-snapshots.ts';
import { renderBackup } from './container-backups.ts';
import { backupsOf } from '../../desired/container-backups.ts';
import { createContainerRouteContext, editable, PutBody, RenameBody } from './container-bodies.ts';
import { createContainerRoute } from './container-create.ts';
import { registerContainerStateRoutes } from './container-state-route.ts';
import { moveContainerToMember } from './container-move.ts';
import { readContainerSnapshot, snapshotsOf } from '../../desired/container-snapshots.ts';

/** The container API: every write is desired state plus an operation settled by the container reconciler. */
export function registerContainerRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db } = deps;
  const ctx = createContainerRouteContext(deps);
  const { profileProject, one, op } = ctx;

  // The rendered list of a project's containers, read again only after a write to what it shows.
  const listing = createVersionedReads(
    () => readDataVersion(db, ['containers', 'container_runtime', 'profiles', 'projects']),
    async (project) => {
      const rows = await listContainers(db, project);
      const rendered = await renderContainers(db, profileProjectOf(await readProject(db, project)), rows);
      return {
        rendered,
        urlsJson: {
          containers: JSON.stringify(rows.map((r) => containerUrl(r))),
          instances: JSON.stringify(rows.map((r) => containerUrl(r, 'instances'))),
        },
        fullJson: JSON.stringify(rendered.map((r) => r.json)),
      };
    },
  );

  // One container as its GET shows it (JSON and ETag), kept like the list: `lxc` and pylxd read it before
  // most commands, and again while they wait.
  const single = createVersionedReads(
    () => readDataVersion(db, ['containers', 'container_runtime', 'profiles', 'projects']),
    async (key) => {
      const [project, name] = JSON.parse(key) as [string, string];
      const cur = await readContainer(db, project, name);
      const [r] = await renderContainers(db, profileProjectOf(await cachedProject(db, project)), [cur]);
      return { row: cur, json: JSON.stringify(r!.json), etag: computeEtag(editable(cur)) };
    },
    256,
  );
  const singleKey = (c: Context<AppEnv>) => JSON.stringify([c.get('project'), param(c, 'name')]);

  instanceRoute(app, '', {
    GET: async (c) => {
      const recursion = recursionOf(c, 2);
      const filter = compileFilter(c.req.query('filter'));
      const collection = collectionOf(c);
      // Every object here is a container: a list of another instance type is empty.
      if (collection === 'instances' && !instanceTypeListed(c.req.query('instance-type'))) return sync(c, []);
      const list = await listing.get(c.get('project'));
      if (recursion === 0 && !filter) return syncRaw(c, list.urlsJson[collection]);
      if (recursion === 1 && !filter) return syncRaw(c, list.fullJson);
      const rendered = list.rendered.filter((r) => !filter || filter(r.json));
      if (recursion === 0)
        return sync(
          c,
          rendered.map((r) => containerUrl(r.row, collection)),
        );
      if (recursion === 1)
        return sync(
          c,
          rendered.map((r) => r.json),
        );
      const [snaps, backups, profiles] = await Promise.all([
        snapshotsOf(
          db,
          rendered.map((r) => r.row.id),
        ),
        backupsOf(
          db,
          rendered.map((r) => r.row.id),
        ),
        profileProject(c).then((pp) => cachedProfiles(db, pp)),
      ]);
      return sync(
        c,
        await Promise.all(
          rendered.map(async (r) => ({
            ...r.json,
            state: await deps.containers.state(r.row, r.runtime),
            snapshots: (snaps.get(r.row.id) ?? []).map((s) => renderSnapshot(s, profiles)),
            backups: (backups.get(r.row.id) ?? []).map(renderBackup),
          })),
        ),
      );
    },
    POST: async (c) => createContainerRoute(c, deps, ctx),
  });

  // Read, If-Match, merge, validate, then a write conditional on the generation read (one atomic
  // step: a concurrent writer makes it read again, so 412 or a fresh merge, never a lost update).
  // `commit` runs the write: PUT's with an operation, inserted in the write's transaction (a 412 comes
  // back before any operation exists); PATCH's with none (writeAndConverge), its UPDATE left in flight so that
  // COMMIT goes out with it (bumpContainerAtInFlight).
  const update = async <T>(
    c: Context<AppEnv>,
    replace: boolean,
    commit: (
      cur: ContainerRow,
      description: string,
      write: (tx: Tx) => Promise<{ row: Promise<ContainerRow> }>,
    ) => Promise<T>,
  ) => {
    const body = await readJson(c, PutBody);
    const pp = await profileProject(c);
    // The first attempt starts from the row GET keeps, when it has it (clients GET before they PUT or PATCH):
    // the write is conditional on its generation, so a stale one is read again (checkedWrite).
    const guess = async () => {
      const kept = await single.peek(singleKey(c)).catch(() => undefined);
      return kept && structuredClone(kept.row);
    };
    return checkedWrite(
      c.req.header('if-match'),
      () => one(c),
      (cur) => computeEtag(editable(cur)),
      async (cur) => {
        if (body.restore !== undefined) {
          // `lxc restore` sends "<container>/<snapshot>" (with nulls for the rest, which must not apply).
          const [prefix, snapName] = body.restore.includes('/')
            ? (body.restore.split('/', 2) as [string, string])
            : [cur.name, body.restore];
          if (prefix !== cur.name)
            throw new ValidationError(`Snapshot "${body.restore}" does not belong to container "${cur.name}"`);
          const snap = await readContainerSnapshot(db, cur.id, snapName);
          return commit(cur, 'Restoring container snapshot', async (tx) =>
            bumpContainerAtInFlight(
              tx,
              cur.id,
              cur.generation,
              {
                restore: { snapshotId: snap.id, seq: (cur.restore?.seq ?? 0) + 1 },
                architecture: snap.architecture,
                ephemeral: snap.ephemeral,
                profiles: snap.profiles,
                config: snap.config,
                devices: snap.devices,
              },
              { project: cur.project, profiles: await lockProfiles(tx, pp, snap.profiles) },
            ),
          );
        }
        // volatile.* keys are svcd's: a client sending them back unchanged (lxc config edit) is fine.
        const { volatile } = splitVolatile(cur.config);
        const nextConfig = replace
          ? { ...mergeConfig({}, body.config), ...volatile }
          : mergeConfig(cur.config, body.config);
        const input: ContainerInput = {
          description: body.description ?? (replace ? '' : cur.description),
          // LXD keeps the current architecture when a PUT/PATCH sends "" (lxc config edit with YAML that omits it).
          architecture: body.architecture || cur.architecture,
          ephemeral: body.ephemeral ?? (replace ? false : cur.ephemeral),
          profiles: body.profiles ?? (replace ? [] : cur.profiles),
          config: nextConfig,
          devices: replace ? (body.devices ?? {}) : { ...cur.devices, ...body.devices },
        };
        const expanded = await validateContainer(
          db,
          pp,
          input,
          cur.config,
          deps.containers.probeNic,
          deps.containers.nicHost && { probe: deps.containers.nicHost, current: cur },
        );
        await checkContainerProxies(db, cur, expanded.devices, deps.containers.listenProbe);
        return commit(cur, 'Updating container', async (tx) =>
          bumpContainerAtInFlight(tx, cur.id, cur.generation, input, {
            project: cur.project,
            profiles: await lockProfiles(tx, pp, input.profiles),
          }),
        );
      },
      guess,
    );
  };
  const withOperation =
    (c: Context<AppEnv>) =>
    (_cur: ContainerRow, description: string, write: (tx: Tx) => Promise<{ row: Promise<ContainerRow> }>) =>
      writeWithOperation(deps, async (tx) => {
        const row = await (await write(tx)).row;
        return {
          operation: op(c, row, description),
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });

  instanceRoute(app, '/:name', {
    GET: async (c) => {
      const { json, etag } = await single.get(singleKey(c));
      return syncRaw(c, json, { etag });
    },
    PUT: async (c) => async(c, await update(c, true, withOperation(c))),
    // PATCH is sync in the spec: it answers once the change converged, or with the reconciler's error.
    PATCH: async (c) => {
      await update(c, false, (cur, _description, write) =>
        writeAndConverge(
          deps,
          CONTAINER_KIND,
          cur.id,
          async (tx) => ({ generation: leaveInFlight((await write(tx)).row.then((r) => r.generation)) }),
          requestSignal(c),
        ),
      );
      return sync(c, {});
    },
    POST: async (c) => {
      const cur = await one(c);
      const body = await readJson(c, RenameBody);
      const member = c.req.query('target');
      if (body.migration && member) return moveContainerToMember(c, deps, cur, member, body);
      if (body.migration) {
        const target = body.target;
        return async(
          c,
          await deps.migration.sendContainer(cur, {
            live: body.live ?? false,
            containerOnly: body.container_only ?? body.instance_only ?? false,
            ...targetOf(target),
          }),
        );
      }
      const operation = await writeWithOperation(deps, async (tx) => {
        validateContainerName(body.name);
        const row = await bumpContainer(tx, cur.id, { name: body.name });
        return {
          operation: op(c, row, 'Renaming container'),
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });
      return async(c, operation);
    },
    DELETE: async (c) => {
      const operation = await writeWithOperation(deps, async (tx) => {
        const row = await markContainerDeletingByName(tx, c.get('project'), param(c, 'name'));
        return {
          operation: op(c, row, 'Deleting container'),
          target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
        };
      });
      return async(c, operation);
    },
  });

  registerContainerSnapshotRoutes(app, deps);

  registerContainerStateRoutes(app, deps, ctx);
}

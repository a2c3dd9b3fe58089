import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import type { Tx } from '../../db/types.ts';
import {
  insertContainerSnapshot,
  listContainerSnapshots,
  markContainerSnapshotDeleting,
  nextSnapshotName,
  readContainerSnapshot,
  renameContainerSnapshot,
} from '../../desired/container-snapshots.ts';
import { bumpContainer, CONTAINER_KIND, containerUrl, readContainer } from '../../desired/containers.ts';
import { ValidationError } from '../../desired/errors.ts';
import { cachedProfiles, cachedProject } from '../../desired/cached-reads.ts';
import { expandConfig } from '../../desired/expand.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import { profileProjectOf } from '../../desired/projects.ts';
import type { ContainerRow, ContainerSnapshotRow, ProfileRow } from '../../desired/schema/index.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import { MigrationTarget, targetOf } from '../migration-bodies.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { async, sync } from '../envelope.ts';
import { renderCollection } from '../query.ts';
import { param } from '../router.ts';
import { collectionOf, containerResources, type InstanceCollection, instanceRoute } from '../instance-collection.ts';

const CreateBody = v.object({
  name: optionalString,
  stateful: v.optional(v.boolean('expected a boolean')),
  expires_at: optionalString,
});
const PostBody = v.object({
  name: v.optional(v.string('expected a string'), ''),
  migration: v.optional(v.boolean('expected a boolean')),
  live: v.optional(v.boolean('expected a boolean')),
  // migration: true with a target is push mode: the sink's operation, which svcd dials
  target: MigrationTarget,
});

const UNSET = '1970-01-01T00:00:00Z';

export function snapshotUrl(
  c: Pick<ContainerRow, 'name' | 'project'>,
  snap: string,
  collection: InstanceCollection = 'containers',
): string {
  const [p, q] = containerUrl(c, collection).split('?');
  return `${p}/snapshots/${encodeURIComponent(snap)}${q ? `?${q}` : ''}`;
}

/**
 * A snapshot as the API shows it; `profiles` are those of the container's profile project: the
 * snapshot's own profiles, as they are now, expanded under its config and devices (as LXD does).
 */
export function renderSnapshot(s: ContainerSnapshotRow, profiles: readonly ProfileRow[]) {
  const byName = new Map(profiles.map((p) => [p.name, p]));
  const expanded = expandConfig(
    s.profiles.map((n) => byName.get(n)).filter((p): p is ProfileRow => !!p),
    s,
  );
  return {
    name: s.name,
    // entity_description: the snapshot API has no way to give a snapshot a description, so it is always empty.
    description: '',
    architecture: s.architecture,
    config: s.config,
    devices: s.devices,
    expanded_config: expanded.config,
    expanded_devices: expanded.devices,
    ephemeral: s.ephemeral,
    profiles: s.profiles,
    stateful: false,
    created_at: s.createdAt.toISOString(),
    last_used_at: UNSET,
    expires_at: UNSET,
  };
}

/** Container snapshots: each change is a desired write settled by the container reconciler. */
export function registerContainerSnapshotRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db } = deps;
  const container = (c: Context<AppEnv>) => readContainer(db, c.get('project'), param(c, 'name'));
  const profilesOf = async (c: Context<AppEnv>) =>
    cachedProfiles(db, profileProjectOf(await cachedProject(db, c.get('project'))));
  const change = (
    c: Context<AppEnv>,
    ct: ContainerRow,
    description: string,
    snap: string,
    fn: (tx: Tx) => Promise<void>,
  ) =>
    writeWithOperation(deps, async (tx) => {
      await fn(tx);
      const row = await bumpContainer(tx, ct.id);
      return {
        operation: {
          class: 'task',
          description,
          project: ct.project,
          resources: { ...containerResources(c, ct), instances_snapshots: [snapshotUrl(ct, snap, collectionOf(c))] },
        },
        target: { kind: CONTAINER_KIND, key: row.id, generation: row.generation },
      };
    });

  instanceRoute(app, '/:name/snapshots', {
    GET: async (c) => {
      const ct = await container(c);
      const profiles = await profilesOf(c);
      return sync(
        c,
        await renderCollection(c, await listContainerSnapshots(db, ct.id), {
          url: (s) => snapshotUrl(ct, s.name, collectionOf(c)),
          render: (s) => renderSnapshot(s, profiles),
        }),
      );
    },
    POST: async (c) => {
      const ct = await container(c);
      const body = await readJson(c, CreateBody);
      if (body.stateful)
        throw new ValidationError(
          'Stateful snapshots need CRIU, which is not available on this host (criu check fails)',
        );
      const name = body.name || (await nextSnapshotName(db, ct.id));
      if (name.includes('/')) throw new ValidationError('Snapshot names cannot contain "/"');
      const pp = profileProjectOf(await cachedProject(db, ct.project));
      return async(
        c,
        await change(c, ct, 'Snapshotting container', name, async (tx) => {
          // The snapshot names the container's profiles: held until commit, as for a container write.
          await lockProfiles(tx, pp, ct.profiles);
          await insertContainerSnapshot(tx, ct, name);
        }),
      );
    },
  });

  instanceRoute(app, '/:name/snapshots/:snap', {
    GET: async (c) => {
      const ct = await container(c);
      return sync(c, renderSnapshot(await readContainerSnapshot(db, ct.id, param(c, 'snap')), await profilesOf(c)));
    },
    POST: async (c) => {
      const ct = await container(c);
      const s = await readContainerSnapshot(db, ct.id, param(c, 'snap'));
      const body = await readJson(c, PostBody);
      if (body.migration) {
        const t = body.target;
        return async(
          c,
          await deps.migration.sendContainer(ct, {
            live: false,
            containerOnly: true,
            snapshot: { id: s.id, name: s.name },
            ...targetOf(t),
          }),
        );
      }
      return async(
        c,
        await change(c, ct, 'Renaming container snapshot', body.name, (tx) =>
          renameContainerSnapshot(tx, s, body.name),
        ),
      );
    },
    DELETE: async (c) => {
      const ct = await container(c);
      const s = await readContainerSnapshot(db, ct.id, param(c, 'snap'));
      return async(
        c,
        await change(c, ct, 'Deleting container snapshot', s.name, (tx) => markContainerSnapshotDeleting(tx, s)),
      );
    },
  });
}

import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { mergeConfig } from '../../desired/config-keys.ts';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import type { StorageVolumeRow } from '../../desired/schema/index.ts';
import { livePool } from '../../desired/volume-reads.ts';
import {
  bumpVolumeAt,
  insertVolume,
  listVolumes,
  markImageVolumeDeleting,
  markVolumeDeleting,
  IMAGE_VOLUME_KIND,
  moveVolume,
  readSnapshot,
  readVolume,
  renameVolume,
  updateVolumeConfig,
  VOLUME_KIND,
  VOLUME_TYPES,
  validateVolumeName,
  volumeUrl,
} from '../../desired/storage-volumes.ts';
import { usedByReader } from '../../desired/used-by.ts';
import { emitLifecycle } from '../../events/index.ts';
import { optionalString, readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { clusteredMemberNames } from '../../cluster/members.ts';
import { awaitConverged, writeWithOperation } from '../desired-write.ts';
import { async, sync } from '../envelope.ts';
import { MigrationTarget, migrationMode, pullSource, targetOf } from '../migration-bodies.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { HttpError } from '../errors.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';
import { registerVolumeSnapshotRoutes } from './storage-volume-snapshots.ts';

const Source = v.object({
  type: v.string('expected a string'),
  pool: optionalString,
  name: optionalString,
  mode: optionalString,
  volume_only: v.optional(v.boolean('expected a boolean')),
  // migration: the other server's operation and its secrets
  operation: optionalString,
  secrets: v.optional(stringMap),
  certificate: optionalString,
  refresh: v.optional(v.boolean('expected a boolean')),
});
const CreateBody = v.object({
  name: v.string('expected a string'),
  type: optionalString,
  description: optionalString,
  config: v.optional(stringMap),
  content_type: optionalString,
  source: v.optional(Source),
});
const UpdateBody = v.object({ description: optionalString, config: v.optional(stringMap), restore: optionalString });
const PostBody = v.object({
  name: v.optional(v.string('expected a string'), ''),
  pool: optionalString,
  migration: v.optional(v.boolean('expected a boolean')),
  volume_only: v.optional(v.boolean('expected a boolean')),
  // migration: true with a target is push mode: the sink's operation, which svcd dials
  target: MigrationTarget,
});

/** Custom volumes live in the default project (svcd has no features.storage.volumes yet). */
export const VOLUME_PROJECT = 'default';
const editable = (vol: StorageVolumeRow) => ({ description: vol.description, config: vol.config });

export function registerStorageVolumeRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, bus } = deps;
  /** What one render reads besides the volume rows, once however many volumes it renders. */
  const readsFor = () => ({ usedBy: usedByReader(db), clustered: clusteredMemberNames(db) });
  const render = async (vol: StorageVolumeRow, reads = readsFor()) => ({
    location: (await reads.clustered).has(vol.location) ? vol.location : 'none',
    name: vol.name,
    description: vol.description,
    type: vol.type,
    config: vol.config,
    used_by: await reads.usedBy.volume(vol),
    content_type: 'filesystem',
    project: vol.project,
    created_at: vol.createdAt.toISOString(),
  });
  const lifecycle = (
    action: string,
    vol: { pool: string; type: string; name: string; project: string },
    context: Record<string, unknown> = {},
  ) =>
    emitLifecycle(bus, { action: `storage-volume-${action}`, source: volumeUrl(vol), project: vol.project, context });
  const typeParam = (c: Context<AppEnv>) => {
    const t = param(c, 'type');
    if (!(VOLUME_TYPES as readonly string[]).includes(t)) throw new NotFoundError(`Unknown storage volume type "${t}"`);
    return t;
  };
  const checkQuota = (pool: { name: string; driver: string; config: Record<string, string> }) =>
    deps.storage.checkVolumeQuota(pool);
  const volumeOf = (c: Context<AppEnv>) =>
    readVolume(db, param(c, 'pool'), VOLUME_PROJECT, typeParam(c), param(c, 'name'));

  const list = (typed: boolean) => async (c: Context<AppEnv>) => {
    const rows = await listVolumes(db, param(c, 'pool'), VOLUME_PROJECT, typed ? typeParam(c) : undefined);
    const reads = readsFor();
    return sync(c, await renderCollection(c, rows, { url: volumeUrl, render: (v) => render(v, reads) }));
  };

  const create = (typed: boolean) => async (c: Context<AppEnv>) => {
    const pool = param(c, 'pool');
    const body = await readJson(c, CreateBody);
    const type = typed ? typeParam(c) : (body.type ?? 'custom');
    if (body.content_type && body.content_type !== 'filesystem')
      throw new ValidationError(`Content type "${body.content_type}" is not supported (only filesystem volumes)`);
    if (!body.source || body.source.type === 'none' || body.source.type === '') {
      const row = await insertVolume(
        db,
        {
          pool,
          project: VOLUME_PROJECT,
          type,
          name: body.name,
          description: body.description,
          config: body.config,
          location: deps.node,
        },
        checkQuota,
      );
      await awaitConverged(deps, { kind: VOLUME_KIND, key: row.id, generation: row.generation }, async () => {
        const gone = await markVolumeDeleting(db, row);
        await awaitConverged(deps, { kind: VOLUME_KIND, key: row.id, generation: gone.generation });
      });
      lifecycle('created', row);
      c.header('Location', volumeUrl(row));
      return sync(c, {});
    }
    if (body.source.type === 'migration') {
      const s = body.source;
      const mode = migrationMode(s.mode);
      if (s.refresh) throw new ValidationError('Refreshing an existing volume from another server is not supported');
      if (type !== 'custom') throw new ValidationError(`Only custom volumes migrate (got type "${type}")`);
      // what another server keeps for itself (volatile.*) stays there
      const config = Object.fromEntries(Object.entries(body.config ?? {}).filter(([k]) => !k.startsWith('volatile.')));
      await livePool(db, pool);
      return async(
        c,
        await deps.migration.receiveVolume({
          pool,
          project: VOLUME_PROJECT,
          name: validateVolumeName(body.name),
          description: body.description ?? '',
          config,
          mode,
          ...pullSource(s),
          volumeOnly: s.volume_only ?? false,
        }),
      );
    }
    if (body.source.type !== 'copy')
      throw new ValidationError(
        `Volume source type "${body.source.type}" is not supported (use "copy" or "migration")`,
      );
    if (!body.source.name) throw new ValidationError('Invalid "source.name": the volume to copy is required');
    const [srcName, snapName] = body.source.name.split('/', 2) as [string, string | undefined];
    const src = await readVolume(db, body.source.pool || pool, VOLUME_PROJECT, 'custom', srcName);
    const snap = snapName ? await readSnapshot(db, src.id, snapName) : undefined;
    const op = await writeWithOperation(deps, async (tx) => {
      const row = await insertVolume(
        tx,
        {
          pool,
          project: VOLUME_PROJECT,
          type,
          name: body.name,
          description: body.description,
          config: { ...src.config, ...body.config },
          source: { volumeId: src.id, ...(snap ? { snapshotId: snap.id } : {}) },
          copySnapshots: !body.source!.volume_only,
          location: deps.node,
        },
        checkQuota,
      );
      return {
        operation: {
          class: 'task',
          description: 'Copying storage volume',
          project: VOLUME_PROJECT,
          resources: { storage_volumes: [volumeUrl(row)] },
        },
        target: { kind: VOLUME_KIND, key: row.id, generation: row.generation },
      };
    });
    return async(c, op);
  };

  route(app, '/1.0/storage-pools/:pool/volumes', { GET: list(false), POST: create(false) });
  route(app, '/1.0/storage-pools/:pool/volumes/:type', { GET: list(true), POST: create(true) });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the write is conditional on the generation read.
    return checkedWrite(
      c.req.header('if-match'),
      () => volumeOf(c),
      (cur) => computeEtag(editable(cur)),
      async (cur) => {
        if (body.restore !== undefined) {
          // `<volume>/<snapshot>` is accepted, but only for this volume's own snapshots.
          const [prefix, snapName] = body.restore.includes('/')
            ? (body.restore.split('/', 2) as [string, string])
            : [cur.name, body.restore];
          if (prefix !== cur.name)
            throw new ValidationError(`Snapshot "${body.restore}" does not belong to storage volume "${cur.name}"`);
          const snap = await readSnapshot(db, cur.id, snapName);
          const row = await bumpVolumeAt(db, cur, {
            restore: { snapshotId: snap.id, seq: (cur.restore?.seq ?? 0) + 1 },
          });
          await awaitConverged(deps, { kind: VOLUME_KIND, key: row.id, generation: row.generation });
          lifecycle('restored', row, { snapshot: snap.name });
          return sync(c, {});
        }
        const row = await updateVolumeConfig(
          db,
          cur,
          {
            description: body.description ?? (replace ? '' : cur.description),
            config: replace ? mergeConfig({}, body.config) : mergeConfig(cur.config, body.config),
          },
          checkQuota,
        );
        await awaitConverged(deps, { kind: VOLUME_KIND, key: row.id, generation: row.generation });
        lifecycle('updated', row);
        return sync(c, {});
      },
    );
  };

  route(app, '/1.0/storage-pools/:pool/volumes/:type/:name', {
    GET: async (c) => {
      const vol = await volumeOf(c);
      return sync(c, await render(vol), { etag: computeEtag(editable(vol)) });
    },
    PUT: update(true),
    PATCH: update(false),
    POST: async (c) => {
      const cur = await volumeOf(c);
      const body = await readJson(c, PostBody);
      if (body.migration) {
        const t = body.target;
        return async(
          c,
          await deps.migration.sendVolume(cur, {
            volumeOnly: body.volume_only ?? false,
            ...targetOf(t),
          }),
        );
      }
      if (body.pool && body.pool !== cur.pool) {
        await livePool(db, body.pool);
        const op = await writeWithOperation(deps, async (tx) => {
          const row = await moveVolume(tx, cur, body.pool!, body.name);
          return {
            operation: {
              class: 'task',
              description: 'Moving storage volume',
              project: VOLUME_PROJECT,
              resources: { storage_volumes: [volumeUrl(row)] },
            },
            target: { kind: VOLUME_KIND, key: row.id, generation: row.generation },
          };
        });
        return async(c, op);
      }
      const row = await renameVolume(db, cur, body.name);
      lifecycle('renamed', row, { old_name: cur.name });
      c.header('Location', volumeUrl(row));
      return sync(c, {});
    },
    DELETE: async (c) => {
      const cur = await volumeOf(c);
      if (cur.type === 'image') {
        const row = await markImageVolumeDeleting(db, cur);
        await awaitConverged(deps, { kind: IMAGE_VOLUME_KIND, key: row.id, generation: row.generation });
        lifecycle('deleted', cur);
        return sync(c, {});
      }
      if (cur.type !== 'custom')
        throw new HttpError(400, `Storage volumes of type "${cur.type}" are removed with their container`);
      const row = await markVolumeDeleting(db, cur);
      await awaitConverged(deps, { kind: VOLUME_KIND, key: row.id, generation: row.generation });
      lifecycle('deleted', cur);
      return sync(c, {});
    },
  });

  registerVolumeSnapshotRoutes(app, deps, { volumeOf, lifecycle });
}

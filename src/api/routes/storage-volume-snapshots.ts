import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import type { Tx } from '../../db/types.ts';
import type { StorageVolumeRow, VolumeSnapshotRow } from '../../desired/schema/index.ts';
import {
  bumpVolume,
  insertSnapshot,
  listSnapshots,
  markSnapshotDeleting,
  readSnapshot,
  renameSnapshot,
  updateSnapshotDescription,
  VOLUME_KIND,
  volumeUrl,
} from '../../desired/storage-volumes.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { writeWithOperation } from '../desired-write.ts';
import { async, sync } from '../envelope.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';

const CreateBody = v.object({ name: optionalString, description: optionalString });
const RenameBody = v.object({ name: v.string('expected a string') });
const UpdateBody = v.object({ description: optionalString });

const snapUrl = (vol: StorageVolumeRow, name: string) => {
  const base = volumeUrl(vol);
  const [p, q] = base.split('?');
  return `${p}/snapshots/${encodeURIComponent(name)}${q ? `?${q}` : ''}`;
};

/** Volume snapshots (extension storage_api_volume_snapshots): each change is a desired write settled by the volume reconciler. */
export function registerVolumeSnapshotRoutes(
  app: Hono<AppEnv>,
  deps: ApiDeps,
  ctx: {
    volumeOf: (c: Context<AppEnv>) => Promise<StorageVolumeRow>;
    lifecycle: (action: string, vol: StorageVolumeRow, context?: Record<string, unknown>) => void;
  },
): void {
  const { db } = deps;
  const render = (s: VolumeSnapshotRow) => ({
    name: s.name,
    description: s.description,
    config: s.config,
    content_type: 'filesystem',
    created_at: s.createdAt.toISOString(),
  });
  /** One snapshot change as an operation waiting on the volume's next generation. */
  const snapshotOp = (vol: StorageVolumeRow, description: string, change: (tx: Tx) => Promise<string>) =>
    writeWithOperation(deps, async (tx) => {
      const name = await change(tx);
      const row = await bumpVolume(tx, vol.id);
      return {
        operation: {
          class: 'task',
          description,
          project: vol.project,
          resources: { storage_volumes: [volumeUrl(vol)], storage_volume_snapshots: [snapUrl(vol, name)] },
        },
        target: { kind: VOLUME_KIND, key: row.id, generation: row.generation },
      };
    });

  route(app, '/1.0/storage-pools/:pool/volumes/:type/:name/snapshots', {
    GET: async (c) => {
      const vol = await ctx.volumeOf(c);
      return sync(
        c,
        await renderCollection(c, await listSnapshots(db, vol.id), { url: (s) => snapUrl(vol, s.name), render }),
      );
    },
    POST: async (c) => {
      const vol = await ctx.volumeOf(c);
      const body = await readJson(c, CreateBody);
      let name = body.name;
      if (!name) {
        const taken = new Set((await listSnapshots(db, vol.id)).map((s) => s.name));
        let i = 0;
        while (taken.has(`snap${i}`)) i++;
        name = `snap${i}`;
      }
      const op = await snapshotOp(
        vol,
        'Snapshotting storage volume',
        async (tx) => (await insertSnapshot(tx, vol, name, body.description ?? '')).name,
      );
      ctx.lifecycle('snapshot-created', vol, { snapshot: name });
      return async(c, op);
    },
  });

  route(app, '/1.0/storage-pools/:pool/volumes/:type/:name/snapshots/:snap', {
    GET: async (c) => {
      const vol = await ctx.volumeOf(c);
      return sync(c, render(await readSnapshot(db, vol.id, param(c, 'snap'))));
    },
    PUT: async (c) => {
      const vol = await ctx.volumeOf(c);
      const snap = await readSnapshot(db, vol.id, param(c, 'snap'));
      const body = await readJson(c, UpdateBody);
      const row = await updateSnapshotDescription(db, snap, body.description ?? '');
      return sync(c, render(row));
    },
    POST: async (c) => {
      const vol = await ctx.volumeOf(c);
      const snap = await readSnapshot(db, vol.id, param(c, 'snap'));
      const { name } = await readJson(c, RenameBody);
      const op = await snapshotOp(
        vol,
        'Renaming storage volume snapshot',
        async (tx) => (await renameSnapshot(tx, snap, name)).name,
      );
      ctx.lifecycle('snapshot-renamed', vol, { snapshot: name, old_name: snap.name });
      return async(c, op);
    },
    DELETE: async (c) => {
      const vol = await ctx.volumeOf(c);
      const snap = await readSnapshot(db, vol.id, param(c, 'snap'));
      const op = await snapshotOp(vol, 'Deleting storage volume snapshot', async (tx) => {
        await markSnapshotDeleting(tx, snap);
        return snap.name;
      });
      ctx.lifecycle('snapshot-deleted', vol, { snapshot: snap.name });
      return async(c, op);
    },
  });
}

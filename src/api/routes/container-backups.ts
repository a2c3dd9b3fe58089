import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import {
  deleteBackupRow,
  insertBackup,
  listBackups,
  nextBackupName,
  readBackup,
  renameBackup,
} from '../../desired/container-backups.ts';
import { readRootPool } from '../../desired/container-pools.ts';
import { expandStoredContainer, readContainer } from '../../desired/containers.ts';
import { listContainerSnapshots } from '../../desired/container-snapshots.ts';
import { ValidationError } from '../../desired/errors.ts';
import type { ContainerBackupRow, ContainerRow } from '../../desired/schema/index.ts';
import { BACKUP_COMPRESSION, readServerKeys, resolveCompression } from '../../desired/server-config.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, sync } from '../envelope.ts';
import { renderCollection } from '../query.ts';
import { param } from '../router.ts';
import { containerResources, instanceRoute, instanceUrl } from '../instance-collection.ts';

const CreateBody = v.object({
  name: optionalString,
  expiry: v.optional(v.union([v.number('expected seconds'), v.string('expected a timestamp')])),
  expires_at: optionalString,
  container_only: v.optional(v.boolean('expected a boolean')),
  instance_only: v.optional(v.boolean('expected a boolean')),
  optimized_storage: v.optional(v.boolean('expected a boolean')),
  compression_algorithm: optionalString,
});
const RenameBody = v.object({ name: v.string('expected a string') });

const UNSET = '1970-01-01T00:00:00Z';
const SERVER_KEY = 'backups.compression_algorithm';

/** The spec's backup fields (`creation_date`, `expiry_date`, `container_only`) next to LXD 5's names, which the lxc CLI reads. */
export const renderBackup = (b: ContainerBackupRow) => {
  const created = b.createdAt.toISOString();
  const expires = b.expiresAt?.toISOString() ?? UNSET;
  return {
    name: b.name,
    creation_date: created,
    expiry_date: expires,
    container_only: b.containerOnly,
    optimized_storage: b.optimizedStorage,
    created_at: created,
    expires_at: expires,
    instance_only: b.containerOnly,
  };
};

/**
 * Container backups (extensions container_backup, backup_compression): a tarball of the root volume and
 * its snapshots with LXD's layout, compressed as asked; the export streams the file as it is.
 */
export function registerContainerBackupRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, ops } = deps;
  const { backups } = deps.containerHost;
  const container = (c: Context<AppEnv>) => readContainer(db, c.get('project'), param(c, 'name'));
  const url = (c: Context<AppEnv>, ct: ContainerRow, b: string) => {
    const [p, q] = instanceUrl(c, ct).split('?');
    return `${p}/backups/${encodeURIComponent(b)}${q ? `?${q}` : ''}`;
  };
  const render = renderBackup;
  const op = (c: Context<AppEnv>, ct: ContainerRow, description: string, backup: string) => ({
    class: 'task' as const,
    description,
    project: ct.project,
    // The lxc CLI takes the backup name from resources.backups[0] minus `/1.0/backups/`.
    resources: { ...containerResources(c, ct), backups: [`/1.0/backups/${backup}`] },
  });

  instanceRoute(app, '/:name/backups', {
    GET: async (c) => {
      const ct = await container(c);
      return sync(
        c,
        await renderCollection(c, await listBackups(db, ct.id), { url: (b) => url(c, ct, b.name), render }),
      );
    },
    POST: async (c) => {
      const ct = await container(c);
      const body = await readJson(c, CreateBody);
      if (body.optimized_storage)
        throw new ValidationError('Optimized (driver-native) backups are not supported: use optimized_storage=false');
      // The request's compression_algorithm, else the server's backups.compression_algorithm, else gzip (as LXD).
      const compression = resolveCompression(
        body.compression_algorithm,
        (await readServerKeys(db, deps.node, [SERVER_KEY]))[SERVER_KEY],
        BACKUP_COMPRESSION,
      );
      const expiresAt =
        typeof body.expiry === 'number'
          ? new Date(Date.now() + body.expiry * 1000)
          : body.expires_at || typeof body.expiry === 'string'
            ? new Date(String(body.expires_at ?? body.expiry))
            : null;
      if (expiresAt && Number.isNaN(expiresAt.getTime()))
        throw new ValidationError('Invalid "expiry": seconds or a timestamp');
      const name = body.name || (await nextBackupName(db, ct.id));
      const row = await insertBackup(db, {
        containerId: ct.id,
        name,
        containerOnly: body.container_only ?? body.instance_only ?? false,
        optimizedStorage: false,
        compression,
        expiresAt: expiresAt && expiresAt.getTime() > 0 ? expiresAt : null,
      });
      const operation = await ops.startTask(op(c, ct, 'Backing up container', name), async ({ signal }) => {
        try {
          const pool = await readRootPool(db, ct.id);
          if (!pool) throw new Error(`container "${ct.name}" has no root volume yet`);
          // Every live snapshot (oldest first) unless container_only.
          const snapshots = row.containerOnly ? [] : await listContainerSnapshots(db, ct.id);
          const expand = (x: Pick<ContainerRow, 'profiles' | 'config' | 'devices'>) =>
            expandStoredContainer(db, {
              project: ct.project,
              profiles: x.profiles,
              config: x.config,
              devices: x.devices,
            });
          await backups.pack({ container: ct, pool, backup: row, snapshots, expand, signal });
        } catch (e) {
          await deleteBackupRow(db, row.id);
          await backups.remove(ct.id, row.id);
          throw e;
        }
      });
      return async(c, operation);
    },
  });

  instanceRoute(app, '/:name/backups/:backup', {
    GET: async (c) => {
      const ct = await container(c);
      return sync(c, render(await readBackup(db, ct.id, param(c, 'backup'))));
    },
    POST: async (c) => {
      const ct = await container(c);
      const b = await readBackup(db, ct.id, param(c, 'backup'));
      const { name } = await readJson(c, RenameBody);
      await renameBackup(db, b, name);
      return async(c, await ops.startTask(op(c, ct, 'Renaming container backup', name), async () => {}));
    },
    DELETE: async (c) => {
      const ct = await container(c);
      const b = await readBackup(db, ct.id, param(c, 'backup'));
      await deleteBackupRow(db, b.id);
      return async(
        c,
        await ops.startTask(op(c, ct, 'Deleting container backup', b.name), () => backups.remove(ct.id, b.id)),
      );
    },
  });

  instanceRoute(app, '/:name/backups/:backup/export', {
    GET: async (c) => {
      const ct = await container(c);
      const b = await readBackup(db, ct.id, param(c, 'backup'));
      const file = await backups.open(ct.id, b.id);
      if (!file) throw new ValidationError(`Backup "${b.name}" is not complete yet`);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(file.size));
      c.header('Content-Disposition', `attachment; filename=${ct.name}-${b.name}${file.extension}`);
      return c.body(Readable.toWeb(file.stream()) as ReadableStream, 200);
    },
  });
}

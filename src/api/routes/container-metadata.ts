import { lstat } from 'node:fs/promises';
import { eq } from 'drizzle-orm';
import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { isTemplateName, parseContainerMetadata } from '../../desired/container-metadata.ts';
import { readContainer } from '../../desired/containers.ts';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import { storagePools, storageVolumes, type ContainerRow } from '../../desired/schema/index.ts';
import {
  listTemplateFiles,
  MAX_TEMPLATE_BYTES,
  readMetadataFile,
  readTemplateFile,
  removeTemplateFile,
  writeMetadataFile,
  writeTemplateFile,
} from '../../host/templates/metadata-files.ts';
import { readBodyLimited, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { checkIfMatch, computeEtag } from '../etag.ts';
import { param, route } from '../router.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import { poolSpecOf } from '../../host/layout.ts';

/**
 * `/1.0/containers/<name>/metadata` and `.../metadata/templates` (extension container_edit_metadata):
 * the metadata.yaml and templates/ the container keeps beside its rootfs (from its image; empty for
 * source `none`). Templates are rendered by the container reconciler (apply-templates.ts).
 */
export function registerContainerMetadataRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db } = deps;
  /** One If-Match check and write of a container's metadata.yaml at a time (keyed by its volume directory). */
  const metadataLocks = createKeyedMutex();

  /** The container and its volume directory (which exists once the container was created). */
  async function where(c: Context<AppEnv>): Promise<{ ct: ContainerRow; dir: string }> {
    const ct = await readContainer(db, c.get('project'), param(c, 'name'));
    const [vol] = await db.select().from(storageVolumes).where(eq(storageVolumes.id, ct.id));
    const [pool] = vol ? await db.select().from(storagePools).where(eq(storagePools.name, vol.pool)) : [];
    const dir = pool && deps.storage.driverFor(pool.driver).volumePath(poolSpecOf(pool, deps.stateDir), { id: ct.id, type: 'container' });
    if (!dir || !(await lstat(dir).then((s) => s.isDirectory(), () => false))) throw new ValidationError(`Container "${ct.name}" has no root volume yet`);
    return { ct, dir };
  }

  /** `?path=`: a template file name (one component, no `/`, not starting with `.`). */
  const templateName = (c: Context<AppEnv>, required: boolean): string | undefined => {
    const name = c.req.query('path');
    if (name === undefined || name === '') {
      if (required) throw new ValidationError('Missing "path": the template file name');
      return undefined;
    }
    if (!isTemplateName(name)) throw new ValidationError(`Invalid template name "${name}": one file name, without "/" and not starting with "."`);
    return name;
  };

  route(app, '/1.0/containers/:name/metadata', {
    GET: async (c) => {
      const { dir } = await where(c);
      const metadata = await readMetadataFile(dir);
      return sync(c, metadata, { etag: computeEtag(metadata) });
    },
    PUT: async (c) => {
      const { dir } = await where(c);
      const metadata = parseContainerMetadata(await readJson(c, v.record(v.string(), v.unknown())));
      // The file lives on this host: the check and the write are one step under its lock.
      await metadataLocks.run(dir, async () => {
        checkIfMatch(c.req.header('if-match'), computeEtag(await readMetadataFile(dir)));
        await writeMetadataFile(dir, metadata);
      });
      return sync(c, {});
    },
  });

  // POST and PUT both create or replace (`lxc config template edit` POSTs to an existing name).
  const upload = async (c: Context<AppEnv>) => {
    const { dir } = await where(c);
    const name = templateName(c, true)!;
    const body = Buffer.from(await readBodyLimited(c, MAX_TEMPLATE_BYTES));
    await writeTemplateFile(dir, name, body);
    return sync(c, {});
  };

  route(app, '/1.0/containers/:name/metadata/templates', {
    GET: async (c) => {
      const { ct, dir } = await where(c);
      const name = templateName(c, false);
      if (name === undefined) return sync(c, await listTemplateFiles(dir));
      const data = await readTemplateFile(dir, name);
      if (!data) throw new NotFoundError(`Template "${name}" of container "${ct.name}" not found`);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(data.length));
      return c.body(new Uint8Array(data), 200);
    },
    POST: upload,
    PUT: upload,
    DELETE: async (c) => {
      const { ct, dir } = await where(c);
      const name = templateName(c, true)!;
      if (!(await removeTemplateFile(dir, name))) throw new NotFoundError(`Template "${name}" of container "${ct.name}" not found`);
      return sync(c, {});
    },
  });
}

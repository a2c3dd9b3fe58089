import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { isTemplateName, parseContainerMetadata } from '../../desired/container-metadata.ts';
import { NotFoundError, ValidationError } from '../../desired/errors.ts';
import { readBodyLimited, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { sync } from '../envelope.ts';
import { checkIfMatch, computeEtag } from '../etag.ts';
import type { MetadataFiles } from '../host-service.ts';
import { param } from '../router.ts';
import { instanceRoute } from '../instance-collection.ts';

/**
 * `/1.0/containers/<name>/metadata` and `.../metadata/templates` (extension container_edit_metadata):
 * the metadata.yaml and templates/ the container keeps beside its rootfs (from its image; empty for
 * source `none`). Templates are rendered by the container reconciler (apply-templates.ts).
 */
export function registerContainerMetadataRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { metadata: host } = deps.containerHost;

  /** The container's metadata files (its volume directory exists once the container was created). */
  async function where(c: Context<AppEnv>): Promise<{ name: string; files: MetadataFiles }> {
    const name = param(c, 'name');
    return { name, files: await host.open({ project: c.get('project'), name }) };
  }

  /** `?path=`: a template file name (one component, no `/`, not starting with `.`). */
  const templateName = (c: Context<AppEnv>, required: boolean): string | undefined => {
    const name = c.req.query('path');
    if (name === undefined || name === '') {
      if (required) throw new ValidationError('Missing "path": the template file name');
      return undefined;
    }
    if (!isTemplateName(name))
      throw new ValidationError(
        `Invalid template name "${name}": one file name, without "/" and not starting with "."`,
      );
    return name;
  };

  instanceRoute(app, '/:name/metadata', {
    GET: async (c) => {
      const { files } = await where(c);
      const metadata = await files.read();
      return sync(c, metadata, { etag: computeEtag(metadata) });
    },
    PUT: async (c) => {
      const { files } = await where(c);
      const metadata = parseContainerMetadata(await readJson(c, v.record(v.string(), v.unknown())));
      // The check and the write are one step under the file's lock.
      await files.update((current) => checkIfMatch(c.req.header('if-match'), computeEtag(current)), metadata);
      return sync(c, {});
    },
  });

  // POST and PUT both create or replace (`lxc config template edit` POSTs to an existing name).
  const upload = async (c: Context<AppEnv>) => {
    const { files } = await where(c);
    const name = templateName(c, true)!;
    const body = Buffer.from(await readBodyLimited(c, host.maxTemplateBytes));
    await files.writeTemplate(name, body);
    return sync(c, {});
  };

  instanceRoute(app, '/:name/metadata/templates', {
    GET: async (c) => {
      const { name: ct, files } = await where(c);
      const name = templateName(c, false);
      if (name === undefined) return sync(c, await files.listTemplates());
      const data = await files.readTemplate(name);
      if (!data) throw new NotFoundError(`Template "${name}" of container "${ct}" not found`);
      c.header('Content-Type', 'application/octet-stream');
      c.header('Content-Length', String(data.length));
      return c.body(new Uint8Array(data), 200);
    },
    POST: upload,
    PUT: upload,
    DELETE: async (c) => {
      const { name: ct, files } = await where(c);
      const name = templateName(c, true)!;
      if (!(await files.removeTemplate(name)))
        throw new NotFoundError(`Template "${name}" of container "${ct}" not found`);
      return sync(c, {});
    },
  });
}

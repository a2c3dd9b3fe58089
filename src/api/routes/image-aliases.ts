import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { createAlias, deleteAlias, listAliases, readAlias, renameAlias, updateAlias } from '../../desired/images.ts';
import type { ImageAliasRow } from '../../desired/schema/index.ts';
import { ValidationError } from '../../desired/errors.ts';
import { optionalString, readJson } from '../body.ts';
import type { AppEnv } from '../context.ts';
import { sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';
import { aliasUrl, imageLifecycle, isTrusted, renderAlias, type ImageRoutesContext } from './image-common.ts';

// `type` (container/virtual-machine) is sent by newer clients and ignored: aliases name one image.
const CreateBody = v.object({
  name: v.string('expected a string'),
  target: v.string('expected a string'),
  description: optionalString,
});
const UpdateBody = v.object({ target: optionalString, description: optionalString });
const RenameBody = v.object({ name: v.string('expected a string') });

const editable = (a: ImageAliasRow) => ({ description: a.description, target: a.fingerprint });

/** Image aliases: guests see the aliases of public images; changes are for trusted callers. */
export function registerImageAliasRoutes(app: Hono<AppEnv>, ictx: ImageRoutesContext): void {
  const { db } = ictx.deps;
  const lifecycle = (c: Context<AppEnv>, action: string, name: string, context: Record<string, unknown> = {}) =>
    imageLifecycle(ictx, c, `image-alias-${action}`, aliasUrl(c, name), context);

  route(app, '/1.0/images/aliases', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const rows = await listAliases(db, c.get('project'), { publicOnly: !isTrusted(c) });
        return sync(c, await renderCollection(c, rows, { url: (a) => aliasUrl(c, a.name), render: renderAlias }));
      },
    },
    POST: async (c) => {
      const body = await readJson(c, CreateBody);
      const a = await createAlias(db, c.get('project'), {
        name: body.name,
        target: body.target,
        description: body.description ?? '',
      });
      lifecycle(c, 'created', a.name, { target: a.fingerprint });
      c.header('Location', aliasUrl(c, a.name));
      return sync(c, {});
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const name = param(c, 'name');
    const project = c.get('project');
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the update is conditional on the alias read (the ETag's fields).
    await checkedWrite(
      c.req.header('if-match'),
      () => readAlias(db, project, name),
      (cur) => computeEtag(editable(cur)),
      (cur) => {
        if (replace && !body.target) throw new ValidationError('Missing "target": it is required');
        return updateAlias(
          db,
          project,
          name,
          { target: body.target || cur.fingerprint, description: body.description ?? (replace ? '' : cur.description) },
          { fingerprint: cur.fingerprint, description: cur.description },
        );
      },
    );
    lifecycle(c, 'updated', name);
    return sync(c, {});
  };

  route(app, '/1.0/images/aliases/:name', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const a = await readAlias(db, c.get('project'), param(c, 'name'), { publicOnly: !isTrusted(c) });
        return sync(c, renderAlias(a), { etag: computeEtag(editable(a)) });
      },
    },
    PUT: update(true),
    PATCH: update(false),
    POST: async (c) => {
      const name = param(c, 'name');
      const { name: newName } = await readJson(c, RenameBody);
      await renameAlias(db, c.get('project'), name, newName);
      lifecycle(c, 'renamed', newName, { old_name: name });
      c.header('Location', aliasUrl(c, newName));
      return sync(c, {});
    },
    DELETE: async (c) => {
      const name = param(c, 'name');
      await deleteAlias(db, c.get('project'), name);
      lifecycle(c, 'deleted', name);
      return sync(c, {});
    },
  });
}

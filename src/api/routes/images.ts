import type { Context, Hono } from 'hono';
import * as v from 'valibot';
import { mergeConfig } from '../../desired/config-keys.ts';
import { ValidationError } from '../../desired/errors.ts';
import {
  fingerprintInUse,
  imageProjectFor,
  listAliases,
  listImages,
  readImage,
  updateImage,
} from '../../desired/images.ts';
import type { ImageAliasRow, ImageRow } from '../../desired/schema/index.ts';
import { readJson, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { async, sync } from '../envelope.ts';
import { checkedWrite, computeEtag } from '../etag.ts';
import { boundaryOf } from '../../util/multipart-parser.ts';
import { renderCollection } from '../query.ts';
import { route } from '../router.ts';
import { registerImageAliasRoutes } from './image-aliases.ts';
import { looksLikeJson, openImageBody, readImageJson } from './image-body.ts';
import {
  imageLifecycle,
  imageUrl,
  isTrusted,
  renderImage,
  visibleImage,
  type ImageRoutesContext,
} from './image-common.ts';
import { exportImage } from './image-export.ts';
import { assertNewImage, cleanFilename, commitImage, removeImage } from '../image-commit.ts';
import { createImageSecrets } from './image-secrets.ts';
import { receiveUpload, uploadOptions } from './image-upload.ts';
import { CreateBody, createImageFromJson, imageDone, imageOp } from './image-create.ts';

const UpdateBody = v.object({
  auto_update: v.optional(v.boolean('expected a boolean')),
  public: v.optional(v.boolean('expected a boolean')),
  properties: v.optional(stringMap),
});

const editable = (img: ImageRow) => ({ auto_update: img.autoUpdate, properties: img.properties, public: img.public });

/** Images (spec: Images): upload, URL import, pull from another server, refresh, list, get, update, delete, export, secrets, aliases. */
export function registerImageRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { db, ops } = deps;
  const ictx: ImageRoutesContext = { deps, store: deps.images, secrets: createImageSecrets() };
  void ictx.store
    .sweep((fp) => fingerprintInUse(db, fp))
    .then((removed) => removed.length && deps.log.info({ removed }, 'removed image files no project uses'))
    .catch((err: unknown) => deps.log.warn({ err }, 'image store sweep failed'));

  const aliasesByImage = async (c: Context<AppEnv>, publicOnly: boolean) => {
    const by = new Map<string, ImageAliasRow[]>();
    for (const a of await listAliases(db, c.get('project'), { publicOnly }))
      by.set(a.fingerprint, [...(by.get(a.fingerprint) ?? []), a]);
    return by;
  };
  const renderOne = async (c: Context<AppEnv>, img: ImageRow) =>
    renderImage(img, await listAliases(db, c.get('project'), { fingerprint: img.fingerprint }));

  registerImageAliasRoutes(app, ictx);

  route(app, '/1.0/images', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const publicOnly = !isTrusted(c);
        const [rows, aliases] = await Promise.all([
          listImages(db, c.get('project'), { publicOnly }),
          aliasesByImage(c, publicOnly),
        ]);
        return sync(
          c,
          await renderCollection(c, rows, {
            url: (i) => imageUrl(c, i.fingerprint),
            render: (i) => renderImage(i, aliases.get(i.fingerprint) ?? []),
          }),
        );
      },
    },
    POST: async (c) => {
      const project = c.get('project');
      await imageProjectFor(db, project);
      const contentType = c.req.header('content-type') ?? '';
      if (/^application\/json\b/i.test(contentType)) return createImageFromJson(ictx, c, await readJson(c, CreateBody));
      const boundary = boundaryOf(contentType);
      if (/^multipart\//i.test(contentType) && !boundary)
        throw new ValidationError('Invalid multipart image: the Content-Type has no boundary');
      const body = openImageBody(c);
      const received = await (async () => {
        // Like LXD, a body that is a JSON object is a create request whatever its Content-Type.
        if (!boundary && looksLikeJson(await body.peek())) return readImageJson(body, CreateBody);
        const opts = uploadOptions(c);
        return { opts, ...(await receiveUpload(ictx, c, body, boundary)) };
      })().catch(async (e: unknown) => {
        // Refused before the whole body was read: read the rest, so that the answer reaches the client.
        if (!(await body.drain())) c.header('Connection', 'close');
        throw e;
      });
      if (!('temp' in received)) return createImageFromJson(ictx, c, received);
      const { opts } = received;
      if (received.partFilename && !opts.filename) opts.filename = cleanFilename(received.partFilename);
      try {
        await assertNewImage(ictx, project, received.fingerprint);
      } catch (e) {
        await ictx.store.discard(received.temp);
        throw e;
      }
      const op = await ops
        .startTask(
          { ...imageOp(c, 'Downloading image', received.fingerprint), metadata: { fingerprint: received.fingerprint } },
          async () => {
            const img = await commitImage(ictx, project, received, opts);
            imageLifecycle(ictx, c, 'image-created', imageUrl(c, img.fingerprint));
            return imageDone(img);
          },
        )
        .catch(async (e: unknown) => {
          await ictx.store.discard(received.temp);
          throw e;
        });
      return async(c, op);
    },
  });

  const update = (replace: boolean) => async (c: Context<AppEnv>) => {
    const project = c.get('project');
    const body = await readJson(c, UpdateBody);
    // Check, merge and write as one step: the update is conditional on the fields read (the ETag's).
    const row = await checkedWrite(
      c.req.header('if-match'),
      () => readImage(db, project, c.req.param('fingerprint') ?? ''),
      (cur) => computeEtag(editable(cur)),
      (cur) =>
        updateImage(
          db,
          project,
          cur.fingerprint,
          replace
            ? {
                public: body.public ?? false,
                autoUpdate: body.auto_update ?? false,
                properties: mergeConfig({}, body.properties),
              }
            : {
                public: body.public ?? cur.public,
                autoUpdate: body.auto_update ?? cur.autoUpdate,
                properties: mergeConfig(cur.properties, body.properties),
              },
          { public: cur.public, autoUpdate: cur.autoUpdate, properties: cur.properties },
        ),
    );
    imageLifecycle(ictx, c, 'image-updated', imageUrl(c, row.fingerprint));
    return sync(c, {});
  };

  route(app, '/1.0/images/:fingerprint', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const img = await visibleImage(ictx, c, c.req.param('fingerprint') ?? '');
        return sync(c, await renderOne(c, img), { etag: computeEtag(editable(img)) });
      },
    },
    PUT: update(true),
    PATCH: update(false),
    DELETE: async (c) => {
      const project = c.get('project');
      const img = await readImage(db, project, c.req.param('fingerprint') ?? '');
      const op = await ops.startTask(imageOp(c, 'Deleting image', img.fingerprint), async () => {
        await removeImage(ictx, project, img.fingerprint);
        imageLifecycle(ictx, c, 'image-deleted', imageUrl(c, img.fingerprint));
      });
      return async(c, op);
    },
  });

  route(app, '/1.0/images/:fingerprint/export', {
    GET: { auth: 'guest', handler: (c) => exportImage(ictx, c) },
    // The spec's "POST on the export path to obtain a secret": the same as /secret.
    POST: { auth: 'guest', handler: (c) => issueSecret(c) },
  });

  async function issueSecret(c: Context<AppEnv>): Promise<Response> {
    const img = await visibleImage(ictx, c, c.req.param('fingerprint') ?? '');
    const grant = ictx.secrets.issue(img.fingerprint, await imageProjectFor(db, c.get('project')));
    try {
      const spec = {
        ...imageOp(c, 'Image download token', img.fingerprint),
        class: 'token' as const,
        mayCancel: true,
        metadata: { secret: grant.secret, fingerprint: img.fingerprint },
      };
      const op = await ops.startTask(spec, async (ctx) => {
        const aborted = new Promise<void>((resolve) =>
          ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        await Promise.race([grant.expired, aborted]);
        grant.revoke();
      });
      imageLifecycle(ictx, c, 'image-secret-created', imageUrl(c, img.fingerprint));
      return async(c, op);
    } catch (e) {
      grant.revoke();
      throw e;
    }
  }

  route(app, '/1.0/images/:fingerprint/secret', { POST: { auth: 'guest', handler: (c) => issueSecret(c) } });

  route(app, '/1.0/images/:fingerprint/refresh', {
    // From its update_source now (an upload or a URL import has none: nothing to refresh); metadata `refreshed`.
    POST: async (c) => {
      const project = c.get('project');
      const img = await readImage(db, project, c.req.param('fingerprint') ?? '');
      const op = await ops.startTask(
        { ...imageOp(c, 'Refreshing image', img.fingerprint), mayCancel: true },
        async (ctx) => {
          const { refreshed, image } = await deps.imagePulls.refresh(
            project,
            img,
            (m) => ctx.setMetadata(m),
            ctx.signal,
          );
          if (refreshed) {
            imageLifecycle(ictx, c, 'image-refreshed', imageUrl(c, image.fingerprint));
            imageLifecycle(ictx, c, 'image-deleted', imageUrl(c, img.fingerprint));
          }
          return { refreshed, ...(refreshed ? { fingerprint: image.fingerprint } : {}) };
        },
      );
      return async(c, op);
    },
  });
}

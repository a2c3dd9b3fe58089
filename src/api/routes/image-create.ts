/**
 * POST /1.0/images with a JSON body: publish a container or snapshot, pull from another server, or import
 * from a URL (an upload is images.ts's). Each is a task operation; the image's lifecycle event when made.
 */
import type { Context } from 'hono';
import * as v from 'valibot';
import { ValidationError } from '../../desired/errors.ts';
import type { ImageRow } from '../../desired/schema/index.ts';
import { optionalString, stringMap } from '../body.ts';
import type { AppEnv } from '../context.ts';
import { async } from '../envelope.ts';
import { cleanFilename, type ImageOptions } from '../image-commit.ts';
import { parseRemoteSource } from '../remote-source.ts';
import { imageLifecycle, imageUrl, type ImageRoutesContext } from './image-common.ts';
import { checkPublishable, publishContainer } from './image-publish.ts';
import { checkSourceUrl, importFromUrl } from './image-url.ts';

const nullable = <S extends v.GenericSchema>(s: S) => v.nullish(s);
const AliasInput = v.object({
  name: v.string('expected a string'),
  description: nullable(v.string('expected a string')),
});
export const CreateBody = v.object({
  filename: optionalString,
  public: v.optional(v.boolean('expected a boolean')),
  auto_update: v.optional(v.boolean('expected a boolean')),
  properties: v.optional(stringMap),
  aliases: v.optional(v.array(AliasInput, 'expected a list of {name, description}')),
  compression_algorithm: optionalString,
  source: v.optional(
    v.object({
      type: nullable(v.string('expected a string')),
      url: nullable(v.string('expected a string')),
      mode: nullable(v.string('expected a string')),
      name: nullable(v.string('expected a string')),
      server: nullable(v.string('expected a string')),
      protocol: nullable(v.string('expected a string')),
      alias: nullable(v.string('expected a string')),
      fingerprint: nullable(v.string('expected a string')),
      secret: nullable(v.string('expected a string')),
      certificate: nullable(v.string('expected a string')),
    }),
  ),
});
/** How an image made from a create request's source (a remote, a URL) is recorded. */
const createOptions = (body: v.InferOutput<typeof CreateBody>): ImageOptions => ({
  filename: cleanFilename(body.filename),
  public: body.public ?? false,
  autoUpdate: body.auto_update ?? false,
  properties: body.properties ?? {},
  aliases: (body.aliases ?? []).map((a) => ({ name: a.name, description: a.description ?? '' })),
});

export const imageOp = (c: Context<AppEnv>, description: string, fp: string | undefined) => ({
  class: 'task' as const,
  description,
  project: c.get('project'),
  resources: (fp ? { images: [imageUrl(c, fp)] } : {}) as Record<string, string[]>,
});
export const imageDone = (img: ImageRow, size = img.size) => ({ fingerprint: img.fingerprint, size: String(size) });

export async function createImageFromJson(
  ictx: ImageRoutesContext,
  c: Context<AppEnv>,
  body: v.InferOutput<typeof CreateBody>,
): Promise<Response> {
  const { deps } = ictx;
  const { ops } = deps;
  const project = c.get('project');
  const given = body.source?.type ?? '';
  // LXD 4's clients (`lxc publish` once `instances` is announced) name the source "instance", for a
  // container or, by a `<container>/<snapshot>` name, a snapshot.
  const type = given === 'instance' ? (body.source?.name?.includes('/') ? 'snapshot' : 'container') : given;
  if (type === 'container' || type === 'snapshot') {
    const name = body.source?.name;
    if (!name) throw new ValidationError('Missing "source.name": the container to publish');
    if (type === 'snapshot' && !name.includes('/'))
      throw new ValidationError('Invalid "source.name": a snapshot is named "<container>/<snapshot>"');
    if (type === 'container' && name.includes('/'))
      throw new ValidationError('Invalid "source.name": use source type "snapshot" for "<container>/<snapshot>"');
    const opts: ImageOptions = {
      filename: cleanFilename(body.filename),
      public: body.public ?? false,
      autoUpdate: false,
      properties: body.properties ?? {},
      aliases: (body.aliases ?? []).map((a) => ({ name: a.name, description: a.description ?? '' })),
    };
    await checkPublishable(ictx, project, name, body.compression_algorithm);
    const op = await ops.startTask(
      {
        ...imageOp(c, 'Publishing container', undefined),
        resources: { containers: [`/1.0/containers/${encodeURIComponent(name.split('/')[0]!)}`] },
      },
      async (ctx) => {
        const image = await publishContainer(
          ictx,
          project,
          { name, compression: body.compression_algorithm, opts },
          ctx.signal,
        );
        imageLifecycle(ictx, c, 'image-created', imageUrl(c, image.fingerprint));
        return imageDone(image);
      },
    );
    return async(c, op);
  }
  if (type === 'image') {
    if (body.source?.mode && body.source.mode !== 'pull')
      throw new ValidationError(`Invalid "source.mode": "${body.source.mode}" (only pull)`);
    const source = parseRemoteSource(body.source ?? {});
    const opts = createOptions(body);
    const op = await ops.startTask({ ...imageOp(c, 'Downloading image', undefined), mayCancel: true }, async (ctx) => {
      const { image, existed } = await deps.imagePulls.pull(
        project,
        source,
        opts,
        (m) => ctx.setMetadata(m),
        ctx.signal,
      );
      if (!existed) imageLifecycle(ictx, c, 'image-created', imageUrl(c, image.fingerprint));
      return imageDone(image);
    });
    return async(c, op);
  }
  if (type !== 'url') {
    if (!body.source) throw new ValidationError('Missing "source": upload a tarball or give a source of type "url"');
    throw new ValidationError(`Creating images from a source of type "${type}" is not supported yet`);
  }
  const url = checkSourceUrl(body.source?.url ?? undefined);
  const opts = createOptions(body);
  const op = await ops.startTask({ ...imageOp(c, 'Downloading image', undefined), mayCancel: true }, async (ctx) => {
    const { image, existed } = await importFromUrl(ictx, project, url, opts, ctx.signal);
    if (!existed) imageLifecycle(ictx, c, 'image-created', imageUrl(c, image.fingerprint));
    return imageDone(image);
  });
  return async(c, op);
}

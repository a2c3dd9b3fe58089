import type { Context } from 'hono';
import { CONTAINER_KIND, insertContainer, readContainer, type ContainerInput } from '../../desired/containers.ts';
import { ConflictError, HostFailureError, NotFoundError } from '../../desired/errors.ts';
import { imagePropertyKeys, touchImageLastUsed } from '../../desired/images.ts';
import { validateContainerName } from '../../desired/names.ts';
import { lockProfiles } from '../../desired/profiles.ts';
import { imageCacheSettings, readServerKeys } from '../../desired/server-config.ts';
import type { RemoteImageSource } from '../host-service.ts';
import type { AppEnv } from '../context.ts';
import { containerResources } from '../instance-collection.ts';
import type { ApiDeps } from '../deps.ts';
import { async } from '../envelope.ts';

/** How long the create operation waits for the container to converge once its image is here. */
const CONVERGE_MS = 30 * 60_000;

/**
 * POST /1.0/containers with `source {type: image, mode: pull, server, …}`: in one task operation,
 * the image is pulled (cached: true; auto_update as images.auto_update_cached says, default true;
 * an image the project has is used as is; concurrent creates share one download), then the
 * container row is written and the operation ends when the reconciler converged it, as a local
 * create's does. The name is checked before answering (409), the source was checked by the caller (400).
 */
export async function createFromRemote(
  c: Context<AppEnv>,
  deps: Pick<ApiDeps, 'db' | 'ops' | 'node' | 'imagePulls' | 'reconcile' | 'convergence'>,
  req: { project: string; name: string; input: ContainerInput; profileProject: string; source: RemoteImageSource },
): Promise<Response> {
  const { db } = deps;
  const { project, name, input } = req;
  validateContainerName(name);
  await readContainer(db, project, name).then(
    () => {
      throw new ConflictError(`Container "${name}" already exists`);
    },
    (e: unknown) => {
      if (!(e instanceof NotFoundError)) throw e;
    },
  );
  const spec = {
    class: 'task' as const,
    description: 'Creating container',
    project,
    resources: containerResources(c, { name, project }),
  };
  const op = await deps.ops.startTask(spec, async (ctx) => {
    const { autoUpdateCached } = imageCacheSettings(await readServerKeys(db, deps.node, ['images.auto_update_cached']));
    const opts = {
      filename: '',
      public: false,
      autoUpdate: autoUpdateCached,
      properties: {},
      aliases: [],
      cached: true,
      lastUsedAt: new Date(),
    };
    const { image } = await deps.imagePulls.pull(project, req.source, opts, (m) => ctx.setMetadata(m), ctx.signal);
    await touchImageLastUsed(db, project, image.fingerprint);
    const row = await db.transaction(async (tx) => {
      await lockProfiles(tx, req.profileProject, input.profiles);
      return insertContainer(
        tx,
        project,
        name,
        { ...input, location: deps.node, config: { ...input.config, ...imagePropertyKeys(image.properties) } },
        { type: 'image', fingerprint: image.fingerprint },
        'stopped',
      );
    });
    const converged = deps.convergence.wait(CONTAINER_KIND, row.id, row.generation, CONVERGE_MS);
    deps.reconcile.enqueue(CONTAINER_KIND, row.id, 'desired write');
    const out = await converged;
    if (!out.ok) throw new HostFailureError(out.error);
  });
  return async(c, op);
}

import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { createAlias, findImage, imageProjectFor, moveAliases } from '../desired/images.ts';
import type { ImageRow } from '../desired/schema/index.ts';
import type { DownloadProgress, RemoteImageSource, RemoteProtocolName } from '../host/images/remote/remote-protocol.ts';
import type { ImageHost } from './host-service.ts';
import { progressText } from './remote-source.ts';
import { cleanFilename, commitImage, removeImage, type ImageOptions } from './image-commit.ts';
import { createSharedFlights } from '../util/shared-flights.ts';

/** Operation metadata while a pull downloads (`download_progress`, the key lxc shows). */
export type PullProgress = (metadata: Record<string, unknown>) => Promise<void> | void;

const FULL_FINGERPRINT = /^[0-9a-f]{64}$/;
const PROGRESS_EVERY_MS = 500;

/** The source an image refreshes from (its update_source); `lxd` was LXD's word for svc. */
export function refreshSource(us: NonNullable<ImageRow['updateSource']>): RemoteImageSource {
  const protocol: RemoteProtocolName = us.protocol === 'simplestreams' ? 'simplestreams' : 'svc';
  const name = us.alias;
  return {
    server: us.server,
    protocol,
    ...(FULL_FINGERPRINT.test(name) ? { fingerprint: name } : { alias: name }),
    ...(us.certificate ? { certificate: us.certificate } : {}),
  };
}

/**
 * Pulling images from other servers into a project (the spec's source-image dict), for
 * POST /1.0/images, container creation and refreshes. Resolve with the protocol client; an image
 * the project already has is not downloaded again; otherwise one download per fingerprint at a
 * time (concurrent pulls of the same image wait for the same download, and see its progress), into
 * the store's temporary files, inspected, then committed with its update_source. A failure leaves
 * no row and no file (the host side removes its temporary files; commitImage is all or nothing).
 */
export function createImagePulls(deps: {
  db: Db;
  images: ImageHost;
  reconcile: { enqueue(kind: string, key: string, reason: string): void };
  log: Logger;
}) {
  const flights = createSharedFlights<void>();
  const progressListeners = new Map<string, Set<DownloadProgress>>();
  const ctx = { deps, store: deps.images };

  const addAliases = async (project: string, fingerprint: string, aliases: ImageOptions['aliases']) => {
    for (const a of aliases)
      await createAlias(deps.db, project, { name: a.name, target: fingerprint, description: a.description ?? '' });
  };

  /** Throttled `download_progress` for one caller; written one after the other, `flush` waits for the last. */
  const reporter = (report: PullProgress) => {
    const started = Date.now();
    let last = 0;
    let chain: Promise<void> = Promise.resolve();
    const progress: DownloadProgress = (received, total) => {
      const now = Date.now();
      if (now - last < PROGRESS_EVERY_MS && received < total) return;
      last = now;
      const text = progressText(received, total, now - started);
      chain = chain.then(() => report({ download_progress: text })).catch(() => {});
    };
    return { progress, flush: () => chain };
  };

  const pulls = {
    /** Remove an image (an expired cached one): row, aliases, files once unused, pool copies. */
    remove: (project: string, fingerprint: string) => removeImage(ctx, project, fingerprint),

    async pull(
      project: string,
      source: RemoteImageSource,
      opts: ImageOptions,
      report: PullProgress,
      signal: AbortSignal,
    ): Promise<{ image: ImageRow; existed: boolean }> {
      const info = await deps.images.remote.resolve(source, signal);
      const have = await findImage(deps.db, project, info.fingerprint);
      if (have) {
        await addAliases(project, have.fingerprint, opts.aliases);
        return { image: have, existed: true };
      }
      const key = `${await imageProjectFor(deps.db, project)}/${info.fingerprint}`;
      const { progress, flush } = reporter(report);
      let listeners = progressListeners.get(key);
      if (!listeners) progressListeners.set(key, (listeners = new Set()));
      listeners.add(progress);
      let leader: boolean;
      try {
        // One download per image at a time: the first caller's settings make the image, later callers wait
        // for it; the download stops only if every caller waiting for it gave up.
        ({ leader } = await flights.run(key, signal, async (flightSignal) => {
          try {
            const received = await deps.images.remote.download(
              source,
              info,
              (r, t) => progressListeners.get(key)?.forEach((l) => l(r, t)),
              flightSignal,
            );
            await commitImage(ctx, project, received, {
              ...opts,
              filename: opts.filename || cleanFilename(info.filename),
              properties: { ...info.properties, ...opts.properties },
              updateSource: opts.updateSource ?? {
                server: source.server,
                protocol: source.protocol,
                certificate: source.certificate ?? '',
                alias: source.alias ?? source.fingerprint ?? info.fingerprint,
              },
            });
          } finally {
            progressListeners.delete(key);
          }
        }));
      } finally {
        listeners.delete(progress);
        // No metadata write may land after the operation ended.
        await flush();
      }
      const image = await findImage(deps.db, project, info.fingerprint);
      if (!image) throw new Error(`Image ${info.fingerprint} was pulled but is gone again`);
      if (!leader) await addAliases(project, image.fingerprint, opts.aliases);
      return { image, existed: !leader };
    },

    /**
     * Refresh an image from its update_source, as LXD's autoUpdateImage: when the source now names
     * another image, that one is pulled (keeping cached, auto_update, public and last_used_at), the
     * aliases move to it, and the old image goes. `refreshed` says whether it changed.
     */
    async refresh(
      project: string,
      img: ImageRow,
      report: PullProgress,
      signal: AbortSignal,
    ): Promise<{ refreshed: boolean; image: ImageRow }> {
      if (!img.updateSource) return { refreshed: false, image: img };
      const source = refreshSource(img.updateSource);
      const info = await deps.images.remote.resolve(source, signal);
      if (info.fingerprint === img.fingerprint) return { refreshed: false, image: img };
      const opts: ImageOptions = {
        filename: '',
        public: img.public,
        autoUpdate: img.autoUpdate,
        properties: {},
        aliases: [],
        cached: img.cached,
        lastUsedAt: img.lastUsedAt,
        updateSource: img.updateSource,
      };
      const { image } = await pulls.pull(project, source, opts, report, signal);
      if (image.fingerprint === img.fingerprint) return { refreshed: false, image: img };
      await moveAliases(deps.db, await imageProjectFor(deps.db, project), img.fingerprint, image.fingerprint);
      await removeImage(ctx, project, img.fingerprint);
      deps.log.info({ from: img.fingerprint, to: image.fingerprint, project }, 'image refreshed');
      return { refreshed: true, image };
    },
  };
  return pulls;
}
export type ImagePulls = ReturnType<typeof createImagePulls>;

import type { Logger } from 'pino';
import type { DbOrTx } from '../db/types.ts';
import { listAutoUpdateImages, listExpiredCachedImages } from '../desired/image-cache.ts';
import type { ImageRow } from '../desired/schema/index.ts';
import { imageCacheSettings, readServerConfig } from '../desired/server-config.ts';
import type { PollObserver } from './types.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** What the image cache work needs (src/api/image-pulls.ts). */
export interface ImageCacheActions {
  refresh(project: string, img: ImageRow, report: () => void, signal: AbortSignal): Promise<{ refreshed: boolean }>;
  remove(project: string, fingerprint: string): Promise<void>;
}

/**
 * The image cache, as LXD's pruneExpiredImages and autoUpdateImages tasks: cached images (pulled
 * for a container) not used for images.remote_cache_expiry days are removed (0: never); every
 * images.auto_update_interval hours (0: never) the auto_update images are refreshed from their
 * update_source (cached ones only when images.auto_update_cached). One cheap query per tick; the
 * settings are read at each tick, so a change applies without a restart. Fractions are allowed
 * (0.001 days), which is how tests see an expiry without waiting days.
 */
export function createImageCacheObserver(deps: {
  db: DbOrTx;
  node: string;
  images: ImageCacheActions;
  log: Logger;
  intervalMs?: number;
  now?: () => number;
}): PollObserver {
  const now = deps.now ?? Date.now;
  let lastUpdate = now();
  return {
    name: 'image-cache',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 10_000,
    async sample(signal) {
      const cfg = imageCacheSettings(await readServerConfig(deps.db, deps.node));
      if (cfg.remoteCacheExpiryDays > 0) {
        for (const img of await listExpiredCachedImages(
          deps.db,
          new Date(now() - cfg.remoteCacheExpiryDays * DAY_MS),
        )) {
          await deps.images.remove(img.project, img.fingerprint);
          deps.log.info(
            { fingerprint: img.fingerprint, project: img.project },
            'removed a cached image unused for images.remote_cache_expiry',
          );
        }
      }
      if (cfg.autoUpdateIntervalHours <= 0 || now() - lastUpdate < cfg.autoUpdateIntervalHours * HOUR_MS) return;
      lastUpdate = now();
      for (const img of await listAutoUpdateImages(deps.db, { includeCached: cfg.autoUpdateCached })) {
        if (signal.aborted) return;
        try {
          const { refreshed } = await deps.images.refresh(img.project, img, () => {}, signal);
          if (refreshed)
            deps.log.info({ fingerprint: img.fingerprint, project: img.project }, 'auto_update image refreshed');
        } catch (e) {
          deps.log.warn({ err: e, fingerprint: img.fingerprint, project: img.project }, 'image auto-update failed');
        }
      }
    },
  };
}

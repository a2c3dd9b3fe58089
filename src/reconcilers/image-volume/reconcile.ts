import { and, eq } from 'drizzle-orm';
import { images, storageVolumes } from '../../desired/schema/index.ts';
import type { Reconciler } from '../runtime/index.ts';
import { readyPool, removeImageVolume, type RootfsDeps } from '../container/ensure-rootfs.ts';
import { IMAGE_VOLUME_KIND } from '../../desired/storage-volumes.ts';

/**
 * Image volumes (an image unpacked on a pool, which containers are cloned from) whose image is gone
 * from every project: removed from their pool, with a dir pool's spare copy, their row and their
 * status. Keyed by volume id; deleting an image enqueues its volumes, and the startup sweep and the
 * periodic resync find any left over. A volume whose image exists is left alone unless it was deleted
 * itself (`deleting_at`); the containers cloned from one are copies or snapshots of their own, so they do
 * not need it.
 */
export function createImageVolumeReconciler(deps: RootfsDeps): Reconciler {
  const { db } = deps;
  const imageExists = async (fingerprint: string) =>
    (await db.select({ fp: images.fingerprint }).from(images).where(eq(images.fingerprint, fingerprint)).limit(1))
      .length > 0;
  return {
    kind: IMAGE_VOLUME_KIND,
    async listKeys() {
      return (
        await db.select({ id: storageVolumes.id }).from(storageVolumes).where(eq(storageVolumes.type, 'image'))
      ).map((r) => r.id);
    },
    async reconcile(id, ctx) {
      const [vol] = await db
        .select()
        .from(storageVolumes)
        .where(and(eq(storageVolumes.id, id), eq(storageVolumes.type, 'image')));
      if (!vol) return {};
      if (vol.deletingAt) {
        // Deleted through the API (storage_images_delete): the pool's copy goes although the image stays; the
        // next create from the image unpacks it again. Its containers are clones of their own.
        const pool = await readyPool(deps, vol.pool);
        await removeImageVolume(deps, pool, vol, async () => false, ctx.signal);
        return { observedGeneration: vol.generation, gone: true };
      }
      if (await imageExists(vol.name)) return {};
      const pool = await readyPool(deps, vol.pool);
      await removeImageVolume(deps, pool, vol, () => imageExists(vol.name), ctx.signal);
      return {};
    },
  };
}

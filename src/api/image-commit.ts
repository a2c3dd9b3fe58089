/**
 * Recording and removing images: the one place an upload, a URL import, a publish and a pull end. A
 * service of the API (image routes and the pull service both call it), so it lives beside them, not
 * among the routes.
 */
import { ConflictError } from '../desired/errors.ts';
import { deleteImage, fingerprintInUse, findImage, insertImage } from '../desired/images.ts';
import { IMAGE_VOLUME_KIND, imageVolumeIds } from '../desired/storage-volumes.ts';
import type { ImageRow } from '../desired/schema/index.ts';
import type { Db } from '../db/types.ts';
import type { ImageHost, ReceivedImage } from './host-service.ts';

/** How the image is to be recorded (from upload headers or the create body). */
export interface ImageOptions {
  filename: string;
  public: boolean;
  autoUpdate: boolean;
  /** Applied on top of metadata.yaml's properties. */
  properties: Record<string, string>;
  aliases: { name: string; description?: string }[];
  cached?: boolean;
  /** Where a pulled image came from (the spec's update_source). */
  updateSource?: { server: string; protocol: string; certificate: string; alias: string } | undefined;
  /** last_used_at (a pulled image starts as used now; a refresh keeps the old image's). */
  lastUsedAt?: Date | null | undefined;
}

/** What committing an image needs: the database and the image store. */
export type ImageCommitContext = { deps: { db: Db }; store: ImageHost };

export type { ReceivedImage };

/** The file name kept for export: a base name only (the CLI joins it to a directory). */
export function cleanFilename(raw: string | undefined): string {
  if (!raw) return '';
  const base = raw.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  return base === '.' || base === '..' ? '' : base.replace(/[\x00-\x1f\x7f]/g, '').slice(0, 255);
}

/** Refuse early (409) when the project already has this image: nothing is stored. */
export async function assertNewImage(ictx: ImageCommitContext, project: string, fingerprint: string): Promise<void> {
  if (await findImage(ictx.deps.db, project, fingerprint))
    throw new ConflictError('Image with same fingerprint already exists');
}

/**
 * Record a received, inspected image: move its files into place and insert its row and aliases,
 * under the fingerprint's lock. On failure the temporary files are removed, and files placed for
 * this image alone too. Upload, URL import, publishing and pulls all end here.
 */
export async function commitImage(
  ictx: ImageCommitContext,
  project: string,
  img: ReceivedImage,
  opts: ImageOptions,
): Promise<ImageRow> {
  const { db } = ictx.deps;
  const { store } = ictx;
  try {
    return await store.withLock(img.fingerprint, async () => {
      if (await findImage(db, project, img.fingerprint))
        throw new ConflictError('Image with same fingerprint already exists');
      const shared = await fingerprintInUse(db, img.fingerprint);
      await store.commit(img.fingerprint, img.temp);
      const meta = img.inspected.metadata;
      try {
        return await insertImage(
          db,
          project,
          {
            fingerprint: img.fingerprint,
            filename: opts.filename,
            size: img.size,
            architecture: meta.architecture,
            split: img.temp.rootfs !== undefined,
            public: opts.public,
            autoUpdate: opts.autoUpdate,
            cached: opts.cached ?? false,
            properties: { ...meta.properties, ...opts.properties },
            createdAt: new Date(meta.creationDate * 1000),
            expiresAt: meta.expiryDate ? new Date(meta.expiryDate * 1000) : null,
            updateSource: opts.updateSource ?? null,
            lastUsedAt: opts.lastUsedAt ?? null,
          },
          opts.aliases,
        );
      } catch (e) {
        if (!shared && !(await fingerprintInUse(db, img.fingerprint))) await store.removeFiles(img.fingerprint);
        throw e;
      }
    });
  } finally {
    await store.discard(img.temp);
  }
}

/**
 * Remove an image from a project: its row (and aliases), its files once no project has it, and its
 * unpacked copies on the pools (image-volume/reconcile.ts keeps them if another project has the
 * image).
 */
export async function removeImage(
  ictx: { deps: { db: Db; reconcile: { enqueue(kind: string, key: string, reason: string): void } }; store: ImageHost },
  project: string,
  fingerprint: string,
): Promise<void> {
  const { db } = ictx.deps;
  await ictx.store.withLock(fingerprint, async () => {
    if (!(await deleteImage(db, project, fingerprint))) return;
    await ictx.store.removeFiles(fingerprint);
    for (const id of await imageVolumeIds(db, fingerprint))
      ictx.deps.reconcile.enqueue(IMAGE_VOLUME_KIND, id, 'image deleted');
  });
}

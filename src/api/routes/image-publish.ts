import { readContainer } from '../../desired/containers.ts';
import { readRootPool } from '../../desired/container-pools.ts';
import { readContainerSnapshot } from '../../desired/container-snapshots.ts';
import { ValidationError } from '../../desired/errors.ts';
import { readContainerRuntime } from '../../desired/runtime-reads.ts';
import type { ImageRow } from '../../desired/schema/index.ts';
import { IMAGE_COMPRESSION, readServerKeys, resolveCompression } from '../../desired/server-config.ts';
import { commitImage, type ImageOptions } from '../image-commit.ts';
import type { ImageRoutesContext } from './image-common.ts';

/** Refuse early (before any operation): the container must exist and be stopped; the compression must be known. */
export async function checkPublishable(
  ictx: ImageRoutesContext,
  project: string,
  name: string,
  requested: string | undefined,
) {
  const { db, node } = ictx.deps;
  // `<container>/<snapshot>` publishes a snapshot (the container may be running); a container must be stopped.
  const [cname, sname] = name.split('/', 2) as [string, string | undefined];
  const c = await readContainer(db, project, cname);
  const snapshot = sname ? await readContainerSnapshot(db, c.id, sname) : undefined;
  const rt = await readContainerRuntime(db, c.id);
  if (!snapshot && rt && rt.state !== 'STOPPED')
    throw new ValidationError(`Container "${c.name}" must be stopped to be published`);
  const key = 'images.compression_algorithm';
  const compression = resolveCompression(requested, (await readServerKeys(db, node, [key]))[key], IMAGE_COMPRESSION);
  return { c, snapshot, compression };
}

/**
 * Publish a stopped container as an image (source type `container`): its root volume (rootfs and
 * templates) packed with a fresh metadata.yaml, compressed with `compression_algorithm`, else the
 * server's `images.compression_algorithm`, else gzip; then recorded like an upload.
 */
export async function publishContainer(
  ictx: ImageRoutesContext,
  project: string,
  input: { name: string; compression?: string | undefined; opts: ImageOptions },
  signal: AbortSignal,
): Promise<ImageRow> {
  const { db, containerHost } = ictx.deps;
  const { c, snapshot, compression } = await checkPublishable(ictx, project, input.name, input.compression);
  const pool = await readRootPool(db, c.id);
  if (!pool) throw new ValidationError(`Container "${c.name}" has no root volume yet`);
  const packed = await containerHost.publish.pack({
    container: c,
    pool,
    snapshotId: snapshot?.id,
    properties: input.opts.properties,
    compression,
    signal,
  });
  return commitImage(ictx, project, packed, input.opts);
}

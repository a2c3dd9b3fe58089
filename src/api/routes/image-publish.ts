import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { stringify, parse } from 'yaml';
import { readContainer } from '../../desired/containers.ts';
import { readContainerSnapshot } from '../../desired/container-snapshots.ts';
import { ValidationError } from '../../desired/errors.ts';
import { containerRuntime, storagePools, storageVolumes, type ImageRow } from '../../desired/schema/index.ts';
import { IMAGE_COMPRESSION, readServerKeys } from '../../desired/server-config.ts';
import { sha256Files } from '../../host/images/hashed-file.ts';
import { inspectImage } from '../../host/images/inspect-image.ts';
import { packImage } from '../../host/images/pack-image.ts';
import { commitImage, type ImageOptions } from './image-import.ts';
import type { ImageRoutesContext } from './image-common.ts';
import { poolSpecOf } from '../../host/layout.ts';

/** Refuse early (before any operation): the container must exist and be stopped; the compression must be known. */
export async function checkPublishable(ictx: ImageRoutesContext, project: string, name: string, requested: string | undefined) {
  const { db, node } = ictx.deps;
  // `<container>/<snapshot>` publishes a snapshot (the container may be running); a container must be stopped.
  const [cname, sname] = name.split('/', 2) as [string, string | undefined];
  const c = await readContainer(db, project, cname);
  const snapshot = sname ? await readContainerSnapshot(db, c.id, sname) : undefined;
  const [rt] = await db.select().from(containerRuntime).where(eq(containerRuntime.id, c.id));
  if (!snapshot && rt && rt.state !== 'STOPPED') throw new ValidationError(`Container "${c.name}" must be stopped to be published`);
  const compression = requested || (await readServerKeys(db, node, ['images.compression_algorithm']))['images.compression_algorithm'] || 'gzip';
  if (!IMAGE_COMPRESSION.includes(compression)) throw new ValidationError(`Invalid compression_algorithm "${compression}": must be one of ${IMAGE_COMPRESSION.join(', ')}`);
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
  const { db, stateDir } = ictx.deps;
  const { c, snapshot, compression } = await checkPublishable(ictx, project, input.name, input.compression);
  const [vol] = await db.select().from(storageVolumes).where(eq(storageVolumes.id, c.id));
  if (!vol) throw new ValidationError(`Container "${c.name}" has no root volume yet`);
  const [pool] = await db.select().from(storagePools).where(eq(storagePools.name, vol.pool));
  const driver = ictx.deps.storage.driverFor(pool!.driver);
  const spec = poolSpecOf(pool!, stateDir);
  const ref = { id: c.id, type: 'container' as const };
  const volPath = snapshot ? driver.snapshotPath(spec, { volume: ref, id: snapshot.id }) : driver.volumePath(spec, ref);

  // The container's metadata.yaml (from its image), refreshed: new creation date, the given properties.
  const old = await readFile(path.join(volPath, 'metadata.yaml'), 'utf8').then((t) => (parse(t) ?? {}) as Record<string, unknown>, () => ({}) as Record<string, unknown>);
  const metadata = {
    ...old,
    architecture: c.architecture,
    creation_date: Math.floor(Date.now() / 1000),
    properties: { ...((old.properties as Record<string, string> | undefined) ?? {}), ...input.opts.properties },
  };
  const work = await mkdtemp(path.join(ictx.store.dir, '.publish-'));
  const temp = ictx.store.tempFiles(false);
  try {
    await writeFile(path.join(work, 'metadata.yaml'), stringify(metadata));
    await packImage({ source: volPath, metadataDir: work, output: temp.meta, compression: compression as 'gzip', signal });
    const fingerprint = await sha256Files([temp.meta], signal);
    const inspected = await inspectImage(temp, signal);
    const { size } = await stat(temp.meta);
    return await commitImage(ictx, project, { temp, fingerprint, size, inspected }, input.opts);
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(temp.meta, { force: true });
  }
}

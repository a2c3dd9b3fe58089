import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { ContainerRow, StoragePoolRow } from '../../desired/schema/index.ts';
import type { ImageStore } from '../images/create-image-store.ts';
import { sha256Files } from '../images/hashed-file.ts';
import { inspectImage } from '../images/inspect-image.ts';
import { packImage } from '../images/pack-image.ts';
import type { VolumePaths } from './volume-paths.ts';

export interface PublishRequest {
  container: ContainerRow;
  pool: StoragePoolRow;
  snapshotId?: string | undefined;
  properties: Record<string, string>;
  compression: string;
  signal: AbortSignal;
}

/** A container (or one of its snapshots) packed as an image: its root volume (rootfs and templates) with a fresh metadata.yaml. */
export function createContainerPublishHost({ store, paths }: { store: ImageStore; paths: VolumePaths }) {
  return {
    /** Into the image store's temporary files (the caller commits or discards them). */
    async pack({ container: c, pool, snapshotId, properties, compression, signal }: PublishRequest) {
      const volPath = snapshotId ? paths.snapshot(pool, c.id, snapshotId) : paths.volume(pool, c.id);
      // The container's metadata.yaml (from its image), refreshed: new creation date, the given properties.
      const old = await readFile(path.join(volPath, 'metadata.yaml'), 'utf8').then(
        (t) => (parse(t) ?? {}) as Record<string, unknown>,
        () => ({}) as Record<string, unknown>,
      );
      const metadata = {
        ...old,
        architecture: c.architecture,
        creation_date: Math.floor(Date.now() / 1000),
        properties: { ...((old.properties as Record<string, string> | undefined) ?? {}), ...properties },
      };
      const work = await mkdtemp(path.join(store.dir, '.publish-'));
      const temp = store.tempFiles(false);
      let kept = false;
      try {
        await writeFile(path.join(work, 'metadata.yaml'), stringify(metadata));
        await packImage({
          source: volPath,
          metadataDir: work,
          output: temp.meta,
          compression: compression as 'gzip',
          signal,
        });
        const fingerprint = await sha256Files([temp.meta], signal);
        const inspected = await inspectImage(temp, signal);
        const { size } = await stat(temp.meta);
        kept = true;
        return { temp, fingerprint, size, inspected };
      } finally {
        await rm(work, { recursive: true, force: true });
        if (!kept) await rm(temp.meta, { force: true });
      }
    },
  };
}

import { lstat } from 'node:fs/promises';
import type { ContainerMetadata } from '../templates/metadata-format.ts';
import { HostInputError } from '../errors.ts';
import { createKeyedMutex } from '../../util/keyed-mutex.ts';
import {
  listTemplateFiles,
  MAX_TEMPLATE_BYTES,
  readMetadataFile,
  readTemplateFile,
  removeTemplateFile,
  writeMetadataFile,
  writeTemplateFile,
} from '../templates/metadata-files.ts';
import type { LocateContainer } from './locate-container.ts';

/** The metadata.yaml and templates/ a container keeps beside its rootfs (from its image; empty for source `none`). */
export function createContainerMetadataHost({ locate }: { locate: LocateContainer }) {
  /** One If-Match check and write of a container's metadata.yaml at a time (keyed by its volume directory). */
  const metadataLocks = createKeyedMutex();
  return {
    maxTemplateBytes: MAX_TEMPLATE_BYTES,
    /** The files of a container whose volume directory exists (it does once the container was created). */
    async open(ct: { project: string; name: string }) {
      const { container, volumeDir: dir } = await locate(ct);
      if (
        !dir ||
        !(await lstat(dir).then(
          (s) => s.isDirectory(),
          () => false,
        ))
      )
        throw new HostInputError(`Container "${container.name}" has no root volume yet`);
      return {
        read: () => readMetadataFile(dir),
        // The file lives on this host: the check and the write are one step under its lock.
        update: (check: (current: ContainerMetadata) => void, next: ContainerMetadata) =>
          metadataLocks.run(dir, async () => {
            check(await readMetadataFile(dir));
            await writeMetadataFile(dir, next);
          }),
        listTemplates: () => listTemplateFiles(dir),
        readTemplate: (name: string) => readTemplateFile(dir, name),
        writeTemplate: (name: string, data: Buffer) => writeTemplateFile(dir, name, data),
        removeTemplate: (name: string) => removeTemplateFile(dir, name),
      };
    },
  };
}

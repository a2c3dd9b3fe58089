import { open, type FileHandle } from 'node:fs/promises';
import { HostUnavailableError } from '../errors.ts';
import { openedBytes } from '../container-host/opened-bytes.ts';
import { detectFileCompression, extensionOf } from '../images/detect-compression.ts';
import type { ImageFiles } from '../images/inspect-image.ts';

/**
 * An image's stored files opened now (a delete that follows cannot cut a download short), with
 * their sizes and the name extensions of their formats. Missing files are a HostUnavailableError.
 */
export async function openImageFiles(fingerprint: string, files: ImageFiles) {
  const missing = (e: unknown): never => {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new HostUnavailableError(`The files of image ${fingerprint} are missing on this host`);
    throw e;
  };
  const metaFh = await open(files.meta, 'r').catch(missing);
  const rootfsFh = files.rootfs
    ? await open(files.rootfs, 'r').catch(async (e: unknown) => {
        await metaFh.close();
        return missing(e);
      })
    : undefined;
  const part = async (fh: FileHandle, file: string) => ({
    ...openedBytes([{ fh, size: (await fh.stat()).size }]),
    ext: extensionOf(await detectFileCompression(file)),
  });
  return { meta: await part(metaFh, files.meta), rootfs: rootfsFh ? await part(rootfsFh, files.rootfs!) : undefined };
}

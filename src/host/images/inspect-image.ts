import { runCommand } from '../exec.ts';
import { detectFileCompression, type ImageFileFormat } from './detect-compression.ts';
import { InvalidImageError } from './errors.ts';
import { parseImageMetadata, type ImageMetadata } from './parse-image-metadata.ts';
import { scanTarball } from './scan-tarball.ts';

/** The files of one image: a unified tarball (`meta` only) or a split image (`meta` + `rootfs`). */
export interface ImageFiles {
  meta: string;
  rootfs?: string | undefined;
}

export interface InspectedImage {
  metadata: ImageMetadata;
  metaFormat: ImageFileFormat;
  rootfsFormat?: ImageFileFormat | undefined;
}

/**
 * Check that the files are an image and read its metadata.yaml: a unified tarball must hold
 * metadata.yaml and rootfs/; a split image a metadata tarball with metadata.yaml and a rootfs
 * tarball or squashfs. Each tarball is read whole (scan-tarball.ts): complete, and every member one
 * GNU tar extracts, so that a stored image always unpacks. Anything else is an InvalidImageError.
 */
export async function inspectImage(files: ImageFiles, signal?: AbortSignal): Promise<InspectedImage> {
  const split = files.rootfs !== undefined;
  const what = split ? 'metadata tarball' : 'image tarball';
  const metaFormat = (await detectFileCompression(files.meta)) ?? 'none';
  if (metaFormat === 'squashfs')
    throw new InvalidImageError(`Invalid ${what}: a squashfs file can only be the rootfs of a split image`);
  const scan = await scanTarball(files.meta, metaFormat, what, signal ? { signal } : {});
  if (scan.metadataYaml === undefined) throw new InvalidImageError(`Invalid ${what}: metadata.yaml is missing`);
  const metadata = parseImageMetadata(scan.metadataYaml);
  if (!split && !scan.hasRootfs) throw new InvalidImageError(`Invalid ${what}: rootfs/ is missing`);
  if (!files.rootfs) return { metadata, metaFormat };
  const rootfsFormat = (await detectFileCompression(files.rootfs)) ?? 'none';
  if (rootfsFormat === 'squashfs') await checkSquashfs(files.rootfs, signal);
  else {
    const root = await scanTarball(files.rootfs, rootfsFormat, 'rootfs tarball', signal ? { signal } : {});
    if (root.entries === 0) throw new InvalidImageError('Invalid rootfs tarball: it is empty');
  }
  return { metadata, metaFormat, rootfsFormat };
}

/** A squashfs rootfs must have a readable superblock (checked with unsquashfs -s). */
async function checkSquashfs(path: string, signal?: AbortSignal): Promise<void> {
  try {
    await runCommand('unsquashfs', ['-s', path], { timeoutMs: 30_000, ...(signal ? { signal } : {}) });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || /ENOENT/.test(String(e)))
      throw new InvalidImageError('squashfs images need unsquashfs (package squashfs-tools), which this host lacks');
    throw new InvalidImageError(`Invalid rootfs squashfs: ${(e as Error).message}`);
  }
}

import {
  detectCompression,
  detectFileCompression,
  type ImageFileFormat,
  type TarFormat,
} from '../images/detect-compression.ts';
import { InvalidBackupError } from './errors.ts';

const NOT_A_TARBALL =
  'Invalid backup: the file is not a (compressed) tarball (expected a plain tar, or gzip, bzip2, xz, zstd or lzma)';

/**
 * The format of a backup tarball from its magic bytes (gzip 1f8b, bzip2 "BZh", xz fd377a585a00, zstd
 * 28b52ffd, lzma 5d0000, plain tar "ustar" at 257), as LXD's import sniffs it: the file's name and the
 * client's word are not trusted. Anything else (a squashfs, garbage) is a 400 before anything is made.
 */
export function backupFormatOf(format: ImageFileFormat | undefined): TarFormat {
  if (!format || format === 'squashfs') throw new InvalidBackupError(NOT_A_TARBALL);
  return format;
}

/** backupFormatOf for the first bytes of a file (at least 512 for a plain tar). */
export const sniffBackupFormat = (head: Uint8Array): TarFormat => backupFormatOf(detectCompression(head));

export async function readBackupFormat(file: string): Promise<TarFormat> {
  return backupFormatOf(await detectFileCompression(file).catch(() => undefined));
}

import { open } from 'node:fs/promises';

/** How an image file is stored: a (possibly compressed) tarball, or a squashfs filesystem (rootfs only). */
export type ImageFileFormat = 'gzip' | 'xz' | 'bzip2' | 'zstd' | 'lzma' | 'none' | 'squashfs';

const MAGIC: [ImageFileFormat, number[]][] = [
  ['gzip', [0x1f, 0x8b]],
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['bzip2', [0x42, 0x5a, 0x68]],
  ['zstd', [0x28, 0xb5, 0x2f, 0xfd]],
  ['squashfs', [0x68, 0x73, 0x71, 0x73]],
  // lzma "alone" format: properties byte 0x5d then a little-endian dictionary size.
  ['lzma', [0x5d, 0x00, 0x00]],
];

/** A tarball format GNU tar writes and reads itself (with the host's gzip, bzip2, xz and zstd). */
export type TarFormat = Exclude<ImageFileFormat, 'squashfs'>;

/** GNU tar's flag for each tarball format: one table for packing images and backups and for unpacking backups. */
export const TAR_COMPRESS_FLAG: Record<TarFormat, string[]> = {
  none: [],
  gzip: ['--gzip'],
  xz: ['--xz'],
  bzip2: ['--bzip2'],
  zstd: ['--zstd'],
  lzma: ['--lzma'],
};

/** The flag for a format named by a caller (a stored string); an unknown name is a programming error, never a silent gzip. */
export function tarCompressFlag(format: string): string[] {
  if (!Object.hasOwn(TAR_COMPRESS_FLAG, format))
    throw new RangeError(`unknown tarball compression ${JSON.stringify(format)}`);
  return TAR_COMPRESS_FLAG[format as TarFormat];
}

/** Detect the format from the first bytes (at least 512 for a plain tar). Undefined: none of them. */
export function detectCompression(head: Uint8Array): ImageFileFormat | undefined {
  for (const [format, magic] of MAGIC) if (magic.every((b, i) => head[i] === b)) return format;
  if (head.length >= 262 && Buffer.from(head.subarray(257, 262)).toString('latin1') === 'ustar') return 'none';
  return undefined;
}

export async function detectFileCompression(path: string): Promise<ImageFileFormat | undefined> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(512);
    const { bytesRead } = await fh.read(buf, 0, 512, 0);
    return detectCompression(buf.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}

/** The file name extension LXD uses for each format (export names). */
export function extensionOf(format: ImageFileFormat | undefined): string {
  switch (format) {
    case 'gzip':
      return '.tar.gz';
    case 'xz':
      return '.tar.xz';
    case 'bzip2':
      return '.tar.bz2';
    case 'zstd':
      return '.tar.zst';
    case 'lzma':
      return '.tar.lzma';
    case 'squashfs':
      return '.squashfs';
    case 'none':
      return '.tar';
    default:
      return '';
  }
}

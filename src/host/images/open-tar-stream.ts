import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { runStreamCommand } from '../exec.ts';
import type { ImageFileFormat } from './detect-compression.ts';

/** Decompressors run on the host (argv arrays); gzip is decompressed in process. */
const DECOMPRESSORS: Partial<Record<ImageFileFormat, [string, string[]]>> = {
  xz: ['xz', ['-dc']],
  lzma: ['xz', ['--format=lzma', '-dc']],
  bzip2: ['bzip2', ['-dc']],
  zstd: ['zstd', ['-dc', '-q']],
};

export interface TarStream {
  /** The uncompressed tar bytes. */
  stream: Readable;
  /** Resolves when the whole input was decompressed without error. */
  done: Promise<void>;
  /** Stop early (nothing more is wanted); never rejects. */
  close(): Promise<void>;
}

/** Open a (possibly compressed) tarball as a stream of its uncompressed bytes. */
export function openTarStream(path: string, format: ImageFileFormat, signal?: AbortSignal): TarStream {
  if (format === 'squashfs') throw new Error('a squashfs file is not a tarball');
  const tool = DECOMPRESSORS[format];
  if (tool) {
    const cmd = runStreamCommand(tool[0], tool[1], { stdinFile: path, ...(signal ? { signal } : {}) });
    return { stream: cmd.stdout, done: cmd.done, close: cmd.stop };
  }
  const file = createReadStream(path, signal ? { signal } : {});
  const stream = format === 'gzip' ? file.pipe(createGunzip()) : file;
  if (stream !== file) file.on('error', (e) => stream.destroy(e));
  const done = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  done.catch(() => {});
  return {
    stream,
    done,
    async close() {
      file.destroy();
      stream.destroy();
    },
  };
}

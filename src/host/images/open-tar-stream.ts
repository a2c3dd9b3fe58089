import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Parser } from 'tar';
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

/**
 * Feed a tar stream through node-tar's parser with backpressure, to its end or until `stop()` says so
 * (the caller found what it needed, or a reason to refuse). Resolves with the error of the decompression
 * (the stream breaking, or the decompressor's exit), if any; the tar stream is closed when stopped early or
 * failed. `onChunk` sees the size of every uncompressed chunk.
 */
export async function feedTarParser(
  tar: TarStream,
  parser: Parser,
  stop: () => boolean,
  onChunk?: (bytes: number) => void,
): Promise<Error | undefined> {
  let error: Error | undefined;
  try {
    for await (const chunk of tar.stream) {
      onChunk?.((chunk as Buffer).length);
      if (!parser.write(chunk as Buffer))
        await Promise.race([once(parser, 'drain'), once(parser, 'error').catch(() => {})]);
      if (stop()) break;
    }
    if (!stop()) {
      const ended = once(parser, 'end');
      parser.end();
      await Promise.race([ended, once(parser, 'error').catch(() => {})]);
      await tar.done.catch((e: unknown) => (error = e as Error));
    }
  } catch (e) {
    error = e as Error;
  } finally {
    if (error || stop()) await tar.close();
  }
  return error;
}

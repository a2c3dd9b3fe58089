import { once } from 'node:events';
import { Parser, type ReadEntry } from 'tar';
import type { ImageFileFormat } from './detect-compression.ts';
import { InvalidImageError } from './errors.ts';
import { openTarStream } from './open-tar-stream.ts';

/** metadata.yaml larger than this is refused (LXD's limit for YAML files). */
const MAX_METADATA_BYTES = 1024 * 1024;

export interface TarballScan {
  /** Content of metadata.yaml (or ./metadata.yaml), when present. */
  metadataYaml?: string | undefined;
  /** A `rootfs/` member was seen. */
  hasRootfs: boolean;
  /** Members read before the scan stopped. */
  entries: number;
}

export interface ScanOptions {
  /** Stop once these were found; the rest of the tarball is not read. */
  want: { metadata: boolean; rootfs: boolean; firstEntry?: boolean };
  signal?: AbortSignal;
}

const FATAL = new Set(['TAR_BAD_ARCHIVE', 'TAR_ENTRY_INVALID', 'TAR_ABORT']);

const memberName = (p: string) => p.replace(/^(\.\/)+/, '');

/**
 * Read a (possibly compressed) tarball with node-tar until what is wanted was seen. A stream that
 * is not a tarball, or is corrupt before that point, is an InvalidImageError.
 */
export async function scanTarball(path: string, format: ImageFileFormat, what: string, opts: ScanOptions): Promise<TarballScan> {
  const tar = openTarStream(path, format, opts.signal);
  const out: TarballScan = { hasRootfs: false, entries: 0 };
  const parser = new Parser({ brotli: false, zstd: false });
  let failure: Error | undefined;
  let metadataDone = false;
  let stop = false;
  const satisfied = () =>
    (!opts.want.metadata || metadataDone) && (!opts.want.rootfs || out.hasRootfs) && (!opts.want.firstEntry || out.entries > 0);

  parser.on('error', (e: Error) => (failure ??= e));
  // Not a tarball, a corrupt header, a truncated stream: fatal. Entry types node-tar does not
  // know (GNU sparse files...) are only skipped: GNU tar extracts them later.
  parser.on('warn', (code: string, message: string | Error) => {
    if (FATAL.has(code)) failure ??= new Error(`${code}: ${message instanceof Error ? message.message : message}`);
  });
  parser.on('entry', (entry: ReadEntry) => {
    out.entries++;
    const name = memberName(entry.path);
    if (name === 'rootfs' || name.startsWith('rootfs/')) out.hasRootfs = true;
    if (name === 'metadata.yaml' && out.metadataYaml === undefined) {
      if (entry.type !== 'File' && entry.type !== 'OldFile') {
        failure ??= new InvalidImageError(`Invalid ${what}: metadata.yaml is not a regular file`);
        entry.resume();
        return;
      }
      if (entry.size > MAX_METADATA_BYTES) {
        failure ??= new InvalidImageError(`Invalid ${what}: metadata.yaml is larger than ${MAX_METADATA_BYTES} bytes`);
        entry.resume();
        return;
      }
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => chunks.push(c));
      entry.on('end', () => {
        out.metadataYaml = Buffer.concat(chunks).toString('utf8');
        metadataDone = true;
        if (satisfied()) stop = true;
      });
      return;
    }
    entry.resume();
    if (satisfied()) stop = true;
  });

  try {
    for await (const chunk of tar.stream) {
      if (!parser.write(chunk as Buffer)) await Promise.race([once(parser, 'drain'), once(parser, 'error').catch(() => {})]);
      if (stop || failure) break;
    }
    if (!stop && !failure) {
      const ended = once(parser, 'end');
      parser.end();
      await Promise.race([ended, once(parser, 'error').catch(() => {})]);
      await tar.done.catch((e: unknown) => (failure ??= e as Error));
    }
  } catch (e) {
    failure ??= e as Error;
  } finally {
    if (stop || failure) await tar.close();
  }
  if (opts.signal?.aborted) throw opts.signal.reason instanceof Error ? opts.signal.reason : new Error('operation cancelled');
  if (failure instanceof InvalidImageError) throw failure;
  if (failure && !stop) throw new InvalidImageError(`Invalid ${what}: ${failure.message}`);
  return out;
}

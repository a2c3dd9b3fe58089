import type { ReadEntry } from 'tar';
import type { ImageFileFormat } from './detect-compression.ts';
import { InvalidImageError } from './errors.ts';
import { feedTarParser, openTarStream } from './open-tar-stream.ts';

/** metadata.yaml larger than this is refused (LXD's limit for YAML files). */
const MAX_METADATA_BYTES = 1024 * 1024;

export interface TarballScan {
  /** Content of metadata.yaml (or ./metadata.yaml), when present. */
  metadataYaml?: string | undefined;
  /** A `rootfs/` member was seen. */
  hasRootfs: boolean;
  /** Members in the tarball. */
  entries: number;
}

export interface ScanOptions {
  signal?: AbortSignal;
}

/** Member types GNU tar extracts as svcd wants them (the rest, e.g. GNU sparse or multi-volume parts, are refused). */
const ACCEPTED_TYPES = new Set([
  'File',
  'OldFile',
  'ContiguousFile',
  'Directory',
  'GNUDumpDir',
  'SymbolicLink',
  'Link',
  'CharacterDevice',
  'BlockDevice',
  'FIFO',
]);

const memberName = (p: string) => p.replace(/^(\.\/)+/, '').replace(/\/+$/, '');

/** Why a member name is refused (absolute, `..`, empty), or undefined when it is fine. */
export function memberNameProblem(raw: string): string | undefined {
  if (raw.startsWith('/')) return 'is an absolute path';
  const name = memberName(raw);
  if (name === '' || name === '.') return raw === './' || raw === '.' ? undefined : 'has an empty name';
  if (name.split('/').includes('..')) return "contains '..'";
  return undefined;
}

/** The normalized parents of `name` (`a/b/c` → `a`, `a/b`). */
function* parentsOf(name: string): Generator<string> {
  for (let i = name.indexOf('/'); i !== -1; i = name.indexOf('/', i + 1)) yield name.slice(0, i);
}

/**
 * Read a (possibly compressed) tarball once from start to end through node-tar's streaming parser
 * (nothing but metadata.yaml is kept in memory), and check that GNU tar will extract all of it:
 * the archive is complete (no cut-short member, header or compressed stream; its end-of-archive
 * marker present), every member has an accepted type, a relative name without `..`, no member lies
 * under an earlier symbolic link (GNU tar would write through it), and every hard link points at
 * an earlier non-directory member. Anything else is an InvalidImageError naming the member.
 */
export async function scanTarball(
  path: string,
  format: ImageFileFormat,
  what: string,
  opts: ScanOptions = {},
): Promise<TarballScan> {
  // node-tar is loaded when a tarball is read, not with the daemon (about 3 MiB of RSS at idle).
  const { Parser } = await import('tar');
  const tar = openTarStream(path, format, opts.signal);
  const out: TarballScan = { hasRootfs: false, entries: 0 };
  const parser = new Parser({ brotli: false, zstd: false });
  let failure: Error | undefined;
  let bytes = 0;
  let sawEnd = false;
  /** Non-directory members (hard link targets), and symbolic links (nothing may be extracted through them). */
  const files = new Set<string>();
  const symlinks = new Set<string>();
  const refuse = (message: string) => (failure ??= new InvalidImageError(`Invalid ${what}: ${message}`));

  parser.on('error', (e: Error) => (failure ??= e));
  // Not a tarball, a corrupt header, a truncated member: fatal.
  parser.on('warn', (code: string, message: string | Error) => {
    const text = message instanceof Error ? message.message : message;
    if (code === 'TAR_BAD_ARCHIVE' && /Truncated input/.test(text)) refuse(`it is cut short (${text})`);
    else if (code === 'TAR_BAD_ARCHIVE' || code === 'TAR_ENTRY_INVALID' || code === 'TAR_ABORT')
      refuse(`${text} (${code})`);
  });
  parser.on('nullBlock', () => (sawEnd = true));
  parser.on('eof', () => (sawEnd = true));
  // Types node-tar does not extract (GNU sparse files, multi-volume continuations, tape labels...).
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    refuse(`member "${entry.path}" has a type svcd does not accept (${entry.type})`);
    entry.resume();
  });
  parser.on('entry', (entry: ReadEntry) => {
    out.entries++;
    check(entry);
    const name = memberName(entry.path);
    if (name === 'rootfs' || name.startsWith('rootfs/')) out.hasRootfs = true;
    if (name === 'metadata.yaml' && out.metadataYaml === undefined && !failure) {
      if (entry.type !== 'File' && entry.type !== 'OldFile') refuse('metadata.yaml is not a regular file');
      else if (entry.size > MAX_METADATA_BYTES) refuse(`metadata.yaml is larger than ${MAX_METADATA_BYTES} bytes`);
      else {
        const chunks: Buffer[] = [];
        entry.on('data', (c: Buffer) => chunks.push(c));
        entry.on('end', () => (out.metadataYaml = Buffer.concat(chunks).toString('utf8')));
        return;
      }
    }
    entry.resume();
  });

  function check(entry: ReadEntry) {
    sawEnd = false;
    if (failure) return;
    if (!ACCEPTED_TYPES.has(entry.type))
      return void refuse(`member "${entry.path}" has a type svcd does not accept (${entry.type})`);
    const problem = memberNameProblem(entry.path);
    if (problem) return void refuse(`member "${entry.path}" ${problem}`);
    const name = memberName(entry.path);
    for (const parent of parentsOf(name))
      if (symlinks.has(parent)) return void refuse(`member "${entry.path}" lies under the symbolic link "${parent}"`);
    if (entry.type === 'Link') {
      const target = entry.linkpath ?? '';
      const bad = memberNameProblem(target);
      if (bad) return void refuse(`hard link "${entry.path}" points at "${target}", which ${bad}`);
      if (!files.has(memberName(target)))
        return void refuse(
          `hard link "${entry.path}" points at "${target}", which is not an earlier file in the archive`,
        );
    }
    if (entry.type === 'Directory' || entry.type === 'GNUDumpDir') {
      // GNU tar replaces a symbolic link by the directory.
      symlinks.delete(name);
      files.delete(name);
    } else {
      files.add(name);
      if (entry.type === 'SymbolicLink') symlinks.add(name);
      else symlinks.delete(name);
    }
  }

  const streamError = await feedTarParser(
    tar,
    parser,
    () => failure !== undefined,
    (n) => (bytes += n),
  );
  if (streamError) {
    // The decompressor failed (gzip in process; xz and others' exit is `tar.done`).
    if (opts.signal?.aborted) failure ??= streamError;
    else refuse(`it is cut short or corrupt (${streamError.message})`);
  }
  if (opts.signal?.aborted)
    throw opts.signal.reason instanceof Error ? opts.signal.reason : new Error('operation cancelled');
  if (!failure && bytes % 512 !== 0)
    refuse(`it is cut short (${bytes} bytes is not a whole number of 512-byte blocks)`);
  if (!failure && out.entries > 0 && !sawEnd)
    refuse('it is cut short (no end-of-archive marker after the last member)');
  if (failure instanceof InvalidImageError) throw failure;
  if (failure) throw new InvalidImageError(`Invalid ${what}: ${failure.message}`);
  return out;
}

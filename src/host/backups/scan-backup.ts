import type { ReadEntry } from 'tar';
import { nameProblem } from '../../util/entity-names.ts';
import { feedTarParser, openTarStream } from '../images/open-tar-stream.ts';
import { readBackupFormat } from './backup-format.ts';
import {
  MAX_BACKUP_YAML_BYTES,
  parseBackupConfig,
  parseBackupIndex,
  type BackupConfig,
  type BackupIndex,
  type BackupSnapshot,
} from './backup-config.ts';
import { InvalidBackupError } from './errors.ts';

/** A backup tarball whose every member was checked, and what it holds. */
export interface ScannedBackup {
  index: BackupIndex;
  /** The container's description: index.yaml's `config`, else `backup/container/backup.yaml`. */
  config: BackupConfig;
  /** The packed snapshots (`backup/snapshots/<name>/`), oldest first, with what backup.yaml says of each. */
  snapshots: BackupSnapshot[];
}

/** What a container (or snapshot) directory of a backup may hold at its top, and of which kind. */
const PART_TOP: Record<string, 'dir' | 'file'> = {
  rootfs: 'dir',
  templates: 'dir',
  'metadata.yaml': 'file',
  'backup.yaml': 'file',
};
const KINDS: Record<string, 'dir' | 'file' | 'other'> = {
  Directory: 'dir',
  File: 'file',
  OldFile: 'file',
  ContiguousFile: 'file',
  SymbolicLink: 'other',
  Link: 'other',
  CharacterDevice: 'other',
  BlockDevice: 'other',
  FIFO: 'other',
};
const FATAL = new Set(['TAR_BAD_ARCHIVE', 'TAR_ENTRY_INVALID', 'TAR_ABORT', 'TAR_ENTRY_UNSUPPORTED']);

const bad = (why: string) => new InvalidBackupError(`Invalid backup: ${why}`);

/** A member name as path components; refuses absolute names, `.`/`..` components and NUL. */
export function memberComponents(raw: string): string[] {
  const name = raw.replace(/\/+$/, '');
  if (!name || name.startsWith('/') || name.includes('\0'))
    throw bad(`member name ${JSON.stringify(raw)} is not a relative path`);
  const parts = name.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..'))
    throw bad(`member name ${JSON.stringify(raw)} has an empty, "." or ".." component`);
  return parts;
}

/** The part (container or one snapshot) a member belongs to, and its path inside that part. */
function partOf(parts: string[], raw: string): { part: string; rest: string[] } | undefined {
  if (parts[0] !== 'backup') throw bad(`member ${JSON.stringify(raw)} is outside backup/`);
  if (
    parts.length === 1 ||
    (parts.length === 2 && (parts[1] === 'index.yaml' || parts[1] === 'container' || parts[1] === 'snapshots'))
  )
    return undefined;
  if (parts[1] === 'container') return { part: 'container', rest: parts.slice(2) };
  if (parts[1] === 'snapshots') {
    const problem = nameProblem('Snapshot', parts[2]);
    if (problem) throw bad(`member ${JSON.stringify(raw)}: ${problem}`);
    return parts.length === 3 ? undefined : { part: `snapshots/${parts[2]}`, rest: parts.slice(3) };
  }
  throw bad(`unexpected member ${JSON.stringify(raw)} (optimized or virtual-machine backups are not supported)`);
}

/**
 * Read a backup tarball (plain or compressed: its magic bytes say how) from start to end and check every
 * member before anything is unpacked: names are relative, without `.`/`..`, inside `backup/index.yaml`,
 * `backup/container/` or `backup/snapshots/<name>/`; no member lies below a member that is not a
 * directory (no writing through a symlink); hard links stay inside their own part; `rootfs` and
 * `templates` are directories, `metadata.yaml` and `backup.yaml` regular files. A corrupt or
 * truncated stream is refused too. The index, backup.yaml and the snapshots they describe must agree.
 */
export async function scanBackup(file: string, signal?: AbortSignal): Promise<ScannedBackup> {
  const format = await readBackupFormat(file);
  // node-tar is loaded when a tarball is read, not with the daemon (about 3 MiB of RSS at idle).
  const { Parser } = await import('tar');
  const tar = openTarStream(file, format, signal);
  const parser = new Parser({ brotli: false, zstd: false });
  let failure: Error | undefined;
  const texts = new Map<string, string>();
  /** Members that are not directories, and every directory some member lies below. */
  const leaves = new Set<string>();
  const parents = new Set<string>();
  const kinds = new Map<string, 'dir' | 'file' | 'other'>();
  const parts = new Set<string>();
  const checkEntry = (entry: ReadEntry) => {
    const comps = memberComponents(entry.path);
    const name = comps.join('/');
    const kind = KINDS[entry.type];
    if (!kind) throw bad(`member ${JSON.stringify(entry.path)} has an unsupported type (${entry.type})`);
    const seen = kinds.get(name);
    if (seen && seen !== kind) throw bad(`member ${JSON.stringify(name)} appears twice with different types`);
    kinds.set(name, kind);
    if (kind !== 'dir') leaves.add(name);
    for (let i = 1; i < comps.length; i++) parents.add(comps.slice(0, i).join('/'));
    const where = partOf(comps, entry.path);
    if (name === 'backup/index.yaml') {
      if (kind !== 'file') throw bad('backup/index.yaml is not a regular file');
      return;
    }
    if (!where) {
      if (kind !== 'dir') throw bad(`member ${JSON.stringify(name)} must be a directory`);
      return;
    }
    parts.add(where.part);
    const top = where.rest[0]!;
    const want = PART_TOP[top];
    if (!want)
      throw bad(
        `unexpected member ${JSON.stringify(name)} (a container holds rootfs, templates, metadata.yaml, backup.yaml)`,
      );
    if (where.rest.length === 1 && kind !== want)
      throw bad(`member ${JSON.stringify(name)} must be a ${want === 'dir' ? 'directory' : 'regular file'}`);
    if (where.rest.length > 1 && want === 'file') throw bad(`member ${JSON.stringify(name)} lies below a file`);
    if (entry.type === 'Link') {
      const target = memberComponents(entry.linkpath ?? '');
      const to = partOf(target, entry.linkpath ?? '');
      if (!to || to.part !== where.part)
        throw bad(
          `hard link ${JSON.stringify(name)} points outside its own directory (${JSON.stringify(entry.linkpath)})`,
        );
      for (let i = 1; i < target.length; i++) parents.add(target.slice(0, i).join('/'));
    }
  };

  parser.on('error', (e: Error) => (failure ??= e));
  parser.on('warn', (code: string, message: string | Error) => {
    if (FATAL.has(code)) failure ??= new Error(`${code}: ${message instanceof Error ? message.message : message}`);
  });
  parser.on('entry', (entry: ReadEntry) => {
    try {
      if (!failure) checkEntry(entry);
    } catch (e) {
      failure ??= e as Error;
    }
    const name = entry.path.replace(/\/+$/, '');
    if (
      !failure &&
      (name === 'backup/index.yaml' || name === 'backup/container/backup.yaml') &&
      entry.type !== 'Directory'
    ) {
      if (entry.size > MAX_BACKUP_YAML_BYTES) {
        failure ??= bad(`${name} is larger than ${MAX_BACKUP_YAML_BYTES} bytes`);
        entry.resume();
        return;
      }
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => chunks.push(c));
      entry.on('end', () => texts.set(name, Buffer.concat(chunks).toString('utf8')));
      return;
    }
    entry.resume();
  });

  const streamError = await feedTarParser(tar, parser, () => failure !== undefined);
  failure ??= streamError;
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('operation cancelled');
  if (failure instanceof InvalidBackupError) throw failure;
  if (failure) throw bad(`the tarball is corrupt or truncated (${failure.message})`);

  for (const p of parents)
    if (leaves.has(p)) throw bad(`members lie below ${JSON.stringify(p)}, which is not a directory`);
  const indexText = texts.get('backup/index.yaml');
  if (indexText === undefined) throw bad('backup/index.yaml is missing');
  const index = parseBackupIndex(indexText);
  if (index.optimized) throw bad('optimized (driver-native) backups are not supported');
  if (index.type !== 'container') throw bad(`backups of type "${index.type}" are not supported (containers only)`);
  const hasRootfs = (part: string) => kinds.get(`backup/${part}/rootfs`) === 'dir';
  if (!hasRootfs('container')) throw bad('backup/container/rootfs is missing');
  const backupYaml = texts.get('backup/container/backup.yaml');
  const config = index.config ?? (backupYaml !== undefined ? parseBackupConfig(backupYaml) : undefined);
  if (!config) throw bad('neither backup/index.yaml nor backup/container/backup.yaml describes the container');
  const snapshots: BackupSnapshot[] = [];
  for (const name of index.snapshots) {
    const problem = nameProblem('Snapshot', name);
    if (problem) throw bad(`backup/index.yaml: ${problem}`);
    if (!hasRootfs(`snapshots/${name}`))
      throw bad(`snapshot "${name}" is listed in backup/index.yaml but backup/snapshots/${name}/rootfs is missing`);
    const s = config.snapshots.find((x) => x.name === name);
    if (!s) throw bad(`snapshot "${name}" is listed in backup/index.yaml but not described by the backup's config`);
    snapshots.push(s);
  }
  for (const p of parts) {
    if (p.startsWith('snapshots/') && !index.snapshots.includes(p.slice('snapshots/'.length)))
      throw bad(`backup/${p} is not listed in backup/index.yaml`);
  }
  // Oldest first (stable: the index's order breaks ties).
  snapshots.sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
  return { index, config, snapshots };
}

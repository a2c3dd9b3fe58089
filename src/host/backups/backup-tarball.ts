import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { runCommand } from '../exec.ts';
import { TAR_CREATE_PRESERVE } from '../images/unpack-image.ts';

/** Compressors of backup tarballs (GNU tar's). */
export const BACKUP_COMPRESSION: Record<string, string[]> = { none: [], gzip: ['--gzip'], xz: ['--xz'], bzip2: ['--bzip2'], zstd: ['--zstd'] };

/** What `backup/index.yaml` records (LXD's layout: `backup/index.yaml`, `backup/container/{rootfs,metadata.yaml,templates}`). */
export interface BackupIndex {
  name: string;
  backend: string;
  pool: string;
  snapshots: string[];
  optimized: boolean;
  type: 'container';
  config: { container: Record<string, unknown> };
}

/** argv for packing a container volume into a backup tarball (pure). */
export function backupTarArgs(opts: { output: string; indexDir: string; volumePath: string; members: string[]; compression: string }): string[] {
  return [
    '--create',
    '--file',
    opts.output,
    '--force-local',
    '--sort=name',
    ...TAR_CREATE_PRESERVE,
    ...(BACKUP_COMPRESSION[opts.compression] ?? BACKUP_COMPRESSION.gzip!),
    '--directory',
    opts.indexDir,
    'backup/index.yaml',
    '--directory',
    opts.volumePath,
    '--transform',
    's,^\\(rootfs\\|metadata\\.yaml\\|templates\\),backup/container/\\1,',
    '--',
    ...opts.members,
  ];
}

/** Pack the container's root volume (rootfs, metadata.yaml, templates) and its index into `output`. */
export async function packBackup(opts: { output: string; volumePath: string; index: BackupIndex; compression: string; present: string[]; signal?: AbortSignal }): Promise<void> {
  const dir = await mkdtemp(path.join(path.dirname(opts.output), '.index-'));
  try {
    await mkdir(path.join(dir, 'backup'));
    await writeFile(path.join(dir, 'backup', 'index.yaml'), stringify(opts.index));
    const members = ['metadata.yaml', 'rootfs', 'templates'].filter((m) => opts.present.includes(m));
    await runCommand('tar', backupTarArgs({ output: opts.output, indexDir: dir, volumePath: opts.volumePath, members, compression: opts.compression }), {
      timeoutMs: 60 * 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Read `backup/index.yaml` from a backup tarball (any compression GNU tar detects). */
export async function readBackupIndex(file: string, signal?: AbortSignal): Promise<BackupIndex> {
  let text: string;
  try {
    text = await runCommand('tar', ['--extract', '--file', file, '--force-local', '--to-stdout', 'backup/index.yaml'], { timeoutMs: 10 * 60_000, ...(signal ? { signal } : {}) });
  } catch {
    throw new Error('not a container backup: backup/index.yaml is missing or the file is not a tarball');
  }
  const index = parse(text) as Partial<BackupIndex> | null;
  if (!index || typeof index !== 'object' || typeof index.name !== 'string') throw new Error('not a container backup: backup/index.yaml has no name');
  return { backend: '', pool: '', snapshots: [], optimized: false, type: 'container', config: { container: {} }, ...index } as BackupIndex;
}

/** Extract `backup/container/*` of a backup tarball into a volume directory, owners and modes kept. */
export async function unpackBackup(file: string, target: string, signal?: AbortSignal): Promise<void> {
  await runCommand(
    'tar',
    ['--extract', '--file', file, '--force-local', '--directory', target, '--numeric-owner', '--same-owner', '--same-permissions', '--xattrs', '--xattrs-include=*', '--strip-components=2', 'backup/container'],
    { timeoutMs: 60 * 60_000, ...(signal ? { signal } : {}) },
  );
}

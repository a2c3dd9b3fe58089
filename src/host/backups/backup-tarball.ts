import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../exec.ts';
import { tarCompressFlag, type TarFormat } from '../images/detect-compression.ts';
import { TAR_CREATE_PRESERVE, TAR_PRESERVE } from '../images/unpack-image.ts';
import { renderBackupConfig, renderBackupIndex, type BackupConfig, type BackupIndex } from './backup-config.ts';
import { readBackupFormat } from './backup-format.ts';

/** What a container (or snapshot) volume contributes to a backup, when present. */
export const BACKUP_MEMBERS = ['metadata.yaml', 'rootfs', 'templates'] as const;

/** One snapshot to pack: its name (`backup/snapshots/<name>/`), its directory on the pool, what that holds. */
export interface SnapshotPart {
  name: string;
  path: string;
  present: string[];
}

/** A snapshot name safe in a tar `--transform` replacement and a path component (validated names always are). */
const SAFE_PART = /^[A-Za-z0-9_.+@=!()-]+$/;
/** A pool directory name that needs no escaping in a tar `--transform` expression (svcd's ids). */
const SAFE_DIR = /^[A-Za-z0-9_-]+$/;

/**
 * argv for packing a backup tarball (pure): `backup/index.yaml` and `backup/container/backup.yaml`
 * from `indexDir`, the container volume's members under `backup/container/`, then each snapshot's
 * under `backup/snapshots/<name>/` (LXD's layout). Transforms rename members and hard-link targets,
 * never symlink targets (those are the container's own paths).
 */
export function backupTarArgs(opts: {
  output: string;
  indexDir: string;
  volumePath: string;
  members: string[];
  compression: string;
  snapshots?: SnapshotPart[];
}): string[] {
  const snaps = opts.snapshots ?? [];
  const args = [
    '--create',
    '--file',
    opts.output,
    '--force-local',
    '--sort=name',
    ...TAR_CREATE_PRESERVE,
    // tar runs the compressor itself and streams into it: the tarball is never whole in memory.
    ...tarCompressFlag(opts.compression),
    '--transform',
    's,^\\(rootfs\\|metadata\\.yaml\\|templates\\),backup/container/\\1,rhS',
  ];
  for (const s of snaps) {
    const dir = path.basename(s.path);
    if (!SAFE_PART.test(s.name) || !SAFE_DIR.test(dir))
      throw new RangeError(`cannot pack snapshot ${JSON.stringify(s.name)} (${s.path})`);
    args.push('--transform', `s,^${dir}/,backup/snapshots/${s.name}/,rhS`);
  }
  args.push(
    '--directory',
    opts.indexDir,
    'backup/index.yaml',
    'backup/container/backup.yaml',
    '--directory',
    opts.volumePath,
    ...opts.members,
  );
  for (const s of snaps) {
    const members = BACKUP_MEMBERS.filter((m) => s.present.includes(m)).map((m) => `${path.basename(s.path)}/${m}`);
    // Member names are svcd's own (no leading dash), so no `--`: tar reads --directory among them.
    args.push(`--directory=${path.dirname(s.path)}`, ...members);
  }
  return args;
}

/**
 * Pack the container's root volume (rootfs, metadata.yaml, templates), its snapshots' volumes, the index and
 * backup.yaml into `output` (written from a temporary directory beside it, removed afterwards).
 */
export async function packBackup(opts: {
  output: string;
  volumePath: string;
  present: string[];
  index: BackupIndex;
  config: BackupConfig;
  snapshots: SnapshotPart[];
  compression: string;
  signal?: AbortSignal;
}): Promise<void> {
  const dir = await mkdtemp(path.join(path.dirname(opts.output), '.index-'));
  try {
    await mkdir(path.join(dir, 'backup', 'container'), { recursive: true });
    await writeFile(path.join(dir, 'backup', 'index.yaml'), renderBackupIndex(opts.index));
    await writeFile(path.join(dir, 'backup', 'container', 'backup.yaml'), renderBackupConfig(opts.config));
    const members = BACKUP_MEMBERS.filter((m) => opts.present.includes(m));
    await runCommand(
      'tar',
      backupTarArgs({
        output: opts.output,
        indexDir: dir,
        volumePath: opts.volumePath,
        members,
        compression: opts.compression,
        snapshots: opts.snapshots,
      }),
      { timeoutMs: 60 * 60_000, ...(opts.signal ? { signal: opts.signal } : {}) },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * argv extracting one part of a backup (`container` or a snapshot's name) into a volume directory (pure).
 * The decompressor is named (from the sniffed magic bytes), not left to tar's guess.
 */
export function unpackTarArgs(file: string, target: string, part: { snapshot?: string }, format: TarFormat): string[] {
  const member = part.snapshot === undefined ? 'backup/container' : `backup/snapshots/${part.snapshot}`;
  if (part.snapshot !== undefined && !SAFE_PART.test(part.snapshot))
    throw new RangeError(`invalid snapshot name ${JSON.stringify(part.snapshot)}`);
  return [
    '--extract',
    '--file',
    file,
    '--force-local',
    ...tarCompressFlag(format),
    '--directory',
    target,
    ...TAR_PRESERVE,
    `--strip-components=${member.split('/').length}`,
    '--no-wildcards',
    '--',
    member,
  ];
}

/**
 * Extract the container's part of a backup tarball (`backup/container/…`), or one snapshot's
 * (`backup/snapshots/<name>/…`), into a volume directory, owners, modes and xattrs kept. The tarball
 * was checked by scanBackup first (paths, links, kinds).
 */
export async function unpackBackup(
  file: string,
  target: string,
  signal?: AbortSignal,
  part: { snapshot?: string } = {},
): Promise<void> {
  const format = await readBackupFormat(file);
  await runCommand('tar', unpackTarArgs(file, target, part, format), {
    timeoutMs: 60 * 60_000,
    ...(signal ? { signal } : {}),
  });
}

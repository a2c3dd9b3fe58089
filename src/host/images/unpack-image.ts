import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../exec.ts';
import { detectFileCompression } from './detect-compression.ts';
import type { ImageFiles } from './inspect-image.ts';

/** GNU tar options that keep what a root filesystem needs: numeric owners, permissions, xattrs. */
export const TAR_PRESERVE = [
  '--numeric-owner',
  '--same-owner',
  '--same-permissions',
  '--xattrs',
  '--xattrs-include=*',
] as const;

/** GNU tar options for creating an image tarball. */
export const TAR_CREATE_PRESERVE = ['--numeric-owner', '--xattrs', '--xattrs-include=*'] as const;

export interface UnpackOptions {
  files: ImageFiles;
  /** Directory to fill (created if missing; should be empty). */
  target: string;
  signal?: AbortSignal;
  /** Overall limit per command; default 30 minutes. */
  timeoutMs?: number;
}

/**
 * Extract an image so that `target/metadata.yaml`, `target/templates/` and `target/rootfs/`
 * exist. Ownership, permissions, symlinks, hardlinks, device nodes and xattrs are preserved: GNU
 * tar extracts tarballs (any compression it recognizes), unsquashfs a squashfs rootfs. Run as root.
 */
export async function unpackImage(opts: UnpackOptions): Promise<void> {
  const { files, target } = opts;
  const run = { timeoutMs: opts.timeoutMs ?? 30 * 60_000, ...(opts.signal ? { signal: opts.signal } : {}) };
  await mkdir(target, { recursive: true, mode: 0o755 });
  await extractTarball(files.meta, target, run);
  const rootfs = path.join(target, 'rootfs');
  if (files.rootfs) {
    if ((await detectFileCompression(files.rootfs)) === 'squashfs') {
      await runCommand('unsquashfs', ['-f', '-n', '-d', rootfs, files.rootfs], run);
    } else {
      await mkdir(rootfs, { recursive: true, mode: 0o755 });
      await extractTarball(files.rootfs, rootfs, run);
    }
  }
  await mkdir(rootfs, { recursive: true, mode: 0o755 });
  await mkdir(path.join(target, 'templates'), { recursive: true, mode: 0o755 });
}

async function extractTarball(
  file: string,
  dir: string,
  run: { timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  await runCommand('tar', ['--extract', '--file', file, '--directory', dir, '--force-local', ...TAR_PRESERVE], run);
}

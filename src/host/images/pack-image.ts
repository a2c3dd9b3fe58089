import { readdir } from 'node:fs/promises';
import { runCommand } from '../exec.ts';
import { TAR_COMPRESS_FLAG, type TarFormat } from './detect-compression.ts';
import { TAR_CREATE_PRESERVE } from './unpack-image.ts';

/**
 * Pack a directory holding `metadata.yaml`, `rootfs/` and optionally `templates/` into a unified
 * image tarball with GNU tar (numeric owners, xattrs, hardlinks and device nodes kept). For
 * publishing a container (createImageFromDirectory) and for tests.
 */
export async function packImage(opts: {
  source: string;
  output: string;
  compression: TarFormat;
  /** Take `metadata.yaml` from this directory instead of `source` (publishing writes a fresh one). */
  metadataDir?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}): Promise<void> {
  const present = new Set(await readdir(opts.source));
  const members = ['metadata.yaml', 'templates', 'rootfs'].filter(
    (m) => present.has(m) && !(opts.metadataDir && m === 'metadata.yaml'),
  );
  const metadata = opts.metadataDir ? ['--directory', opts.metadataDir, 'metadata.yaml'] : [];
  await runCommand(
    'tar',
    [
      '--create',
      '--file',
      opts.output,
      '--force-local',
      '--sort=name',
      ...TAR_CREATE_PRESERVE,
      ...TAR_COMPRESS_FLAG[opts.compression],
      ...metadata,
      '--directory',
      opts.source,
      '--',
      ...members,
    ],
    { timeoutMs: opts.timeoutMs ?? 30 * 60_000, ...(opts.signal ? { signal: opts.signal } : {}) },
  );
}

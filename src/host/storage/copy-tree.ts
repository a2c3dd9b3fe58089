/** Copy directory trees with rsync or cp, and the crash-safe "build in <dst>.partial, then rename" pattern. */
import { rename } from 'node:fs/promises';
import { classifierFor } from '../command-failure.ts';
import { runCommand } from '../exec.ts';
import { cpArgs, rsyncArgs } from './copy-args.ts';
import { pathExists } from './fs-helpers.ts';

/** Copies of whole volumes can take long: no practical timeout, cancellation by signal. */
const COPY_TIMEOUT_MS = 7 * 24 * 3600_000;

/** Make dst's content exactly src's (rsync --delete; `checksum` when dst may already hold files); dst must exist. */
export async function syncTree(opts: {
  src: string;
  dst: string;
  bwlimit?: string | undefined;
  checksum?: boolean | undefined;
  signal?: AbortSignal | undefined;
}): Promise<void> {
  await runCommand('rsync', rsyncArgs(opts), { signal: opts.signal, timeoutMs: COPY_TIMEOUT_MS });
}

/**
 * Copy src's content into the existing empty dst, reflinking where the filesystem can (local copies).
 * `background`: work nobody waits for (a spare copy) yields the CPU and the disk to everything else
 * (`nice -n 19`, `ionice -c 3`).
 */
export async function cloneTree(opts: {
  src: string;
  dst: string;
  signal?: AbortSignal | undefined;
  background?: boolean;
}): Promise<void> {
  // (judged as cp's failures, not nice's)
  if (opts.background)
    await runCommand('nice', ['-n', '19', 'ionice', '-c', '3', 'cp', ...cpArgs(opts)], {
      signal: opts.signal,
      timeoutMs: COPY_TIMEOUT_MS,
      failure: classifierFor('cp'),
    });
  else await runCommand('cp', cpArgs(opts), { signal: opts.signal, timeoutMs: COPY_TIMEOUT_MS });
}

export interface AtomicBuild {
  /** Final path: if it exists, the build is complete and nothing is done. */
  dst: string;
  /** Create the empty container at the given (`.partial`) path: mkdir, btrfs subvolume create, ... */
  create(p: string): Promise<void>;
  /** Remove a stale or failed partial build at the given path (absent must be fine). */
  remove(p: string): Promise<void>;
  /** Fill the partial container. */
  fill(p: string): Promise<void>;
}

export function partialPath(dst: string): string {
  return `${dst}.partial`;
}

/**
 * Build `<dst>.partial` from scratch, then rename it to `dst`: after a crash either `dst` is complete or
 * absent (a leftover `.partial` is redone). Returns false when `dst` already existed.
 */
export async function buildAtomically(b: AtomicBuild): Promise<boolean> {
  if (await pathExists(b.dst)) return false;
  const partial = partialPath(b.dst);
  await b.remove(partial);
  await b.create(partial);
  try {
    await b.fill(partial);
    await rename(partial, b.dst);
  } catch (e) {
    await b.remove(partial).catch(() => undefined);
    throw e;
  }
  return true;
}

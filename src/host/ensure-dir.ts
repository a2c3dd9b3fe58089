import { statSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';

/**
 * `dir` exists as a directory with permission bits `mode`. A directory already so costs one stat (a few µs,
 * no thread-pool hand-off): reconciles of converged objects run this on every pass.
 */
export async function ensureDir(dir: string, mode: number): Promise<void> {
  const st = statSync(dir, { throwIfNoEntry: false });
  if (st?.isDirectory() && (st.mode & 0o7777) === mode) return;
  await mkdir(dir, { recursive: true, mode });
  await chmod(dir, mode);
}

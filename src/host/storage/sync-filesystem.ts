import { runCommand } from '../exec.ts';

/**
 * Write out everything dirty of the file system holding `p`, and commit it (`sync -f`: syncfs(2), which
 * node does not offer): what a received transfer does before it reports success.
 */
export async function syncFilesystem(p: string, signal?: AbortSignal): Promise<void> {
  await runCommand('sync', ['-f', p], { signal, timeoutMs: 10 * 60_000 });
}

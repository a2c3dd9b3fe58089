/** Which filesystem (if any) a block device or image file holds, by low-level probing (`blkid -p`). */
import { HostCommandError, runCommand } from '../exec.ts';

export function blkidTypeArgs(target: string): string[] {
  return ['--probe', '--output', 'value', '--match-tag', 'TYPE', target];
}

/**
 * The filesystem type (`btrfs`, `ext4`, ...), or undefined when blkid finds none (exit code 2 with nothing on
 * stderr). Any other failure (exit 2 with an error such as EPERM, 8 = ambivalent result, ...) throws: "could not
 * tell" must never be mistaken for "empty, safe to format".
 */
export async function filesystemType(target: string, signal?: AbortSignal): Promise<string | undefined> {
  try {
    const out = (await runCommand('blkid', blkidTypeArgs(target), { signal, timeoutMs: 30_000 })).trim();
    return out === '' ? undefined : out;
  } catch (e) {
    if (e instanceof HostCommandError && e.exitCode === 2 && e.stderr === '') return undefined;
    throw e;
  }
}

/** mount/umount: pure argv builders and their runners. */
import { HostCommandError, runCommand } from '../exec.ts';

export interface MountRequest {
  source: string;
  target: string;
  fsType?: string | undefined;
  /** Comma-separated `-o` options ("" or absent = none). */
  options?: string | undefined;
  bind?: boolean | undefined;
}

export function mountArgs(req: MountRequest): string[] {
  const args: string[] = [];
  if (req.bind) args.push('--bind');
  if (req.fsType) args.push('-t', req.fsType);
  if (req.options && req.options.trim() !== '') args.push('-o', req.options.trim());
  args.push(req.source, req.target);
  return args;
}

export function umountArgs(target: string, lazy = false): string[] {
  return lazy ? ['--lazy', target] : [target];
}

/** Is this failure umount's "target is busy"? */
export function isBusyError(e: unknown): boolean {
  return e instanceof HostCommandError && /busy/i.test(e.stderr);
}

export async function mountFs(req: MountRequest, signal?: AbortSignal): Promise<void> {
  await runCommand('mount', mountArgs(req), { signal, timeoutMs: 60_000 });
}

/** Unmount; if the target is busy, detach it lazily (the kernel finishes when the last user goes). */
export async function unmount(target: string, signal?: AbortSignal): Promise<void> {
  try {
    await runCommand('umount', umountArgs(target), { signal, timeoutMs: 60_000 });
  } catch (e) {
    if (!isBusyError(e)) throw e;
    await runCommand('umount', umountArgs(target, true), { signal, timeoutMs: 60_000 });
  }
}

/** argv to change the options of a mounted filesystem in place. */
export function remountArgs(target: string, options: string): string[] {
  return ['-o', options.trim() === '' ? 'remount' : `remount,${options.trim()}`, target];
}

export async function remount(target: string, options: string, signal?: AbortSignal): Promise<void> {
  await runCommand('mount', remountArgs(target, options), { signal, timeoutMs: 60_000 });
}

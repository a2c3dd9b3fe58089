import { execa } from 'execa';

/** A host command that failed: carries the argv, exit code and stderr. */
export class HostCommandError extends Error {
  constructor(
    readonly command: string[],
    readonly exitCode: number | undefined,
    readonly stderr: string,
    message: string,
  ) {
    super(message);
    this.name = 'HostCommandError';
  }
}

export interface RunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  input?: string | Buffer;
  env?: Record<string, string>;
}

/** Run a host command (argv array, never a shell string); resolves with stdout. The only execa user. */
export async function runCommand(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const res = await execa(file, args, {
    reject: false,
    timeout: opts.timeoutMs ?? 60_000,
    cancelSignal: opts.signal,
    input: opts.input,
    env: opts.env,
    stripFinalNewline: true,
  });
  if (res.failed) {
    const stderr = String(res.stderr ?? '').trim();
    const why = res.timedOut ? 'timed out' : res.isCanceled ? 'was cancelled' : res.exitCode !== undefined ? `exited with ${res.exitCode}` : String(res.shortMessage);
    throw new HostCommandError([file, ...args], res.exitCode, stderr, `${[file, ...args].join(' ')} ${why}${stderr ? `: ${stderr}` : ''}`);
  }
  return String(res.stdout ?? '');
}

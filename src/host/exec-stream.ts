import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { HostCommandError } from './exec.ts';

export interface StreamCommand {
  /** The command's standard output, to be read as it comes. */
  stdout: Readable;
  /** Resolves when the command exited with 0; rejects with a HostCommandError otherwise (unless stopped). */
  done: Promise<void>;
  /** Kill the command (its output is no longer wanted) and wait for it; never rejects. */
  stop(): Promise<void>;
}

/**
 * Run a host command whose standard output is streamed (argv array, never a shell string), with
 * standard input read from a file. For decompressors: `xz -dc`, `zstd -dc`, `bzip2 -dc`.
 */
export function runStreamCommand(file: string, args: readonly string[], opts: { stdinFile?: string; signal?: AbortSignal } = {}): StreamCommand {
  const sub = execa(file, args, {
    stdin: opts.stdinFile ? { file: opts.stdinFile } : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: { stdout: false, stderr: true },
    reject: false,
    cancelSignal: opts.signal,
    maxBuffer: { stderr: 64 * 1024 },
  });
  let stopped = false;
  const result = sub.then((res) => {
    if (!res.failed || stopped) return;
    const stderr = String(res.stderr ?? '').trim();
    const why = res.isCanceled ? 'was cancelled' : res.exitCode !== undefined ? `exited with ${res.exitCode}` : String(res.shortMessage);
    throw new HostCommandError([file, ...args], res.exitCode, stderr, `${[file, ...args].join(' ')} ${why}${stderr ? `: ${stderr}` : ''}`);
  });
  // Callers that stop early never look at `done`: keep an unobserved failure from crashing the process.
  result.catch(() => {});
  return {
    stdout: sub.stdout,
    done: result,
    async stop() {
      stopped = true;
      sub.stdout.destroy();
      sub.kill();
      await result.catch(() => {});
    },
  };
}

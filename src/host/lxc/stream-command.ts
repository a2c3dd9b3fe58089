/**
 * A long-running host command whose stdout is consumed line by line (`lxc-monitor`). `runCommand` in
 * ../exec.ts buffers stdout until exit, so it cannot feed a stream observer; this is its streaming twin
 * with the same rules (argv array, AbortSignal, HostCommandError). It belongs next to runCommand in
 * exec.ts — it lives here only because this change could not touch exec.ts.
 */
import { execa } from 'execa';
import { HostCommandError } from '../exec.ts';

export interface StreamCommandOptions {
  /** Aborting stops the command (SIGTERM, SIGKILL 5 s later) and resolves: a requested stop is not an error. */
  signal?: AbortSignal;
  onLine: (line: string) => void;
}

/** Run `file args`, call `onLine` for each stdout line as it arrives, resolve when it exits cleanly or is aborted. */
export async function streamCommand(file: string, args: readonly string[], opts: StreamCommandOptions): Promise<void> {
  const sub = execa(file, args, {
    reject: false,
    cancelSignal: opts.signal,
    stdin: 'ignore',
    buffer: { stdout: false, stderr: true },
    stripFinalNewline: true,
  });
  try {
    for await (const line of sub.iterable({ from: 'stdout' })) opts.onLine(String(line));
  } catch {
    // the stream ends with an error when the process is killed; the result below says why
  }
  const res = await sub;
  if (res.isCanceled || opts.signal?.aborted) return;
  if (res.failed) {
    const stderr = String(res.stderr ?? '').trim();
    const why = res.exitCode !== undefined ? `exited with ${res.exitCode}` : String(res.shortMessage);
    throw new HostCommandError([file, ...args], res.exitCode, stderr, `${[file, ...args].join(' ')} ${why}${stderr ? `: ${stderr}` : ''}`);
  }
}

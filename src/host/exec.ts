import os from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { execa } from 'execa';
import * as pty from 'node-pty';

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

/** The HostCommandError for a failed execa result (argv, exit code, stderr in the message). */
function commandError(file: string, args: readonly string[], res: { exitCode?: number | undefined; stderr?: unknown; timedOut?: boolean; isCanceled?: boolean; shortMessage?: string }): HostCommandError {
  const stderr = String(res.stderr ?? '').trim();
  const why = res.timedOut ? 'timed out' : res.isCanceled ? 'was cancelled' : res.exitCode !== undefined ? `exited with ${res.exitCode}` : String(res.shortMessage);
  return new HostCommandError([file, ...args], res.exitCode, stderr, `${[file, ...args].join(' ')} ${why}${stderr ? `: ${stderr}` : ''}`);
}

export interface RunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  input?: string | Buffer;
  env?: Record<string, string>;
}

/** Run a host command (argv array, never a shell string); resolves with stdout. This file is the only execa (and node-pty) user. */
export async function runCommand(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const res = await execa(file, args, {
    reject: false,
    timeout: opts.timeoutMs ?? 60_000,
    cancelSignal: opts.signal,
    input: opts.input,
    env: opts.env,
    stripFinalNewline: true,
  });
  if (res.failed) throw commandError(file, args, res);
  return String(res.stdout ?? '');
}

// --- streaming ---------------------------------------------------------------------------

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
    throw commandError(file, args, res);
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

/** A long-running command whose stdout is consumed line by line (`lxc-monitor`). */
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
  if (res.failed) throw commandError(file, args, res);
}

// --- interactive processes (exec in a container) ------------------------------------------

/** How a child ended: its exit code, or the signal that killed it. */
export interface ProcessExit {
  exitCode?: number;
  signal?: string;
}

/** Where a spawned process's standard stream goes: a pipe, the null device, or an open file descriptor. */
export type StdioTarget = 'pipe' | 'ignore' | number;

export interface SpawnedProcess {
  pid: number;
  /** Present when that stream is a pipe. */
  stdin: Writable | null;
  stdout: Readable | null;
  stderr: Readable | null;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<ProcessExit>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Start a long-running host command (argv array, never a shell string) with each standard stream a
 * pipe, the null device or a given file descriptor; nothing is buffered (the caller streams the
 * pipes), no timeout. For `lxc-attach` under exec.
 */
export function spawnProcess(file: string, args: readonly string[], opts: { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget; cwd?: string }): SpawnedProcess {
  const sub = execa(file, args, {
    // (execa's option types do not take the union: each is one of its accepted forms)
    stdin: opts.stdin as 'pipe',
    stdout: opts.stdout as 'pipe',
    stderr: opts.stderr as 'pipe',
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    // The child gets no part of svcd's environment (lxc-attach clears it inside anyway).
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    extendEnv: false,
    buffer: false,
    reject: false,
    stripFinalNewline: false,
  });
  // The process's own exit, not execa's result: that also waits for the pipes to end, which a
  // background process the command started may hold open for ever.
  const exited = new Promise<ProcessExit>((resolve) => {
    sub.once('exit', (code, signal) => resolve(signal ? { signal } : { exitCode: code ?? 1 }));
    void sub.then((res) => resolve(res.signal ? { signal: res.signal } : { exitCode: res.exitCode ?? 1 }), () => resolve({ exitCode: 1 }));
  });
  return {
    pid: sub.pid ?? -1,
    stdin: opts.stdin === 'pipe' ? sub.stdin : null,
    stdout: opts.stdout === 'pipe' ? sub.stdout : null,
    stderr: opts.stderr === 'pipe' ? sub.stderr : null,
    exited,
    kill: (signal = 'SIGTERM') => {
      sub.kill(signal);
    },
  };
}

/** A host command running under a pseudo-terminal (node-pty): one byte stream both ways. */
export interface PtyProcess {
  pid: number;
  onData(cb: (data: Buffer) => void): void;
  write(data: Buffer): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
  exited: Promise<ProcessExit>;
  kill(signal?: NodeJS.Signals): void;
}

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows`; raw bytes, no decoding. */
export function spawnPty(file: string, args: readonly string[], opts: { cols: number; rows: number; cwd?: string }): PtyProcess {
  const term = pty.spawn(file, [...args], {
    cols: opts.cols,
    rows: opts.rows,
    cwd: opts.cwd ?? '/',
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    // Bytes as they are (binary output, split UTF-8 sequences): node-pty then hands out Buffers.
    encoding: null,
    name: 'xterm',
  });
  const exited = new Promise<ProcessExit>((resolve) => {
    term.onExit(({ exitCode, signal }) => resolve(signal ? { signal: signalName(signal) } : { exitCode }));
  });
  return {
    pid: term.pid,
    onData: (cb) => {
      term.onData((d) => cb(typeof d === 'string' ? Buffer.from(d, 'utf8') : (d as Buffer)));
    },
    write: (data) => term.write(data),
    resize: (cols, rows) => {
      try {
        term.resize(cols, rows);
      } catch {
        // the PTY is already gone
      }
    },
    pause: () => term.pause(),
    resume: () => term.resume(),
    exited,
    kill: (signal = 'SIGHUP') => {
      try {
        term.kill(signal);
      } catch {
        // already gone
      }
    },
  };
}

const signalName = (n: number): string => Object.entries(os.constants.signals).find(([, v]) => v === n)?.[0] ?? String(n);

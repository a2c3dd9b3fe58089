import { createInterface } from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import { classifyFailure, type FailureClassifier } from './command-failure.ts';
import {
  runInHelper,
  spawnPtyStreamed,
  spawnStreamed,
  type PtyProcess,
  type StdioTarget,
  type StreamedProcess as SpawnedProcess,
} from './spawn/spawn-helper.ts';

/**
 * A host command that failed: carries the argv, exit code and stderr, and whether retrying can help
 * (`terminal`, decided by the tool's classifier in command-failure.ts). A terminal one ends the
 * reconcile's operations at once with `terminalMessage`, the tool's own words.
 */
export class HostCommandError extends Error {
  constructor(
    readonly command: string[],
    readonly exitCode: number | undefined,
    readonly stderr: string,
    message: string,
    readonly terminal = false,
  ) {
    super(message);
    this.name = 'HostCommandError';
  }

  /** What the operation says when this failure is terminal: the tool's stderr (trimmed), else the message. */
  get terminalMessage(): string {
    return this.stderr || this.message;
  }
}

type FailedResult = {
  exitCode?: number | undefined;
  stderr?: unknown;
  timedOut?: boolean;
  isCanceled?: boolean;
  shortMessage?: string | undefined;
};

/** The HostCommandError for a failed execa result (argv, exit code, stderr in the message), classified. */
function commandError(
  file: string,
  args: readonly string[],
  res: FailedResult,
  classifier?: FailureClassifier,
): HostCommandError {
  const stderr = String(res.stderr ?? '').trim();
  const why = res.timedOut
    ? 'timed out'
    : res.isCanceled
      ? 'was cancelled'
      : res.exitCode !== undefined
        ? `exited with ${res.exitCode}`
        : String(res.shortMessage);
  const notStarted =
    res.exitCode === undefined && /could not be started|ENOENT|EACCES/.test(String(res.shortMessage ?? ''));
  const kind = classifyFailure(
    file,
    { exitCode: res.exitCode, stderr, timedOut: !!res.timedOut, canceled: !!res.isCanceled, notStarted },
    classifier,
  );
  return new HostCommandError(
    [file, ...args],
    res.exitCode,
    stderr,
    `${[file, ...args].join(' ')} ${why}${stderr ? `: ${stderr}` : ''}`,
    kind === 'terminal',
  );
}

export interface RunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  input?: string | Buffer;
  env?: Record<string, string>;
  /** false: the command gets only `env`, not svcd's environment. */
  extendEnv?: boolean;
  /** Run as this user and group (svcd runs as root). */
  uid?: number;
  gid?: number;
  /** How to judge a failure, when not by the tool's entry in command-failure.ts (e.g. `nice … cp`). */
  failure?: FailureClassifier;
}

/**
 * Run a host command (argv array, never a shell string); resolves with stdout. It runs in the spawn
 * helper (spawn/spawn-helper.ts, a small C process), so svcd's own large process is not forked for
 * it. This file is the only execa user (image decompressors, a few per image upload).
 */
export async function runCommand(file: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const res = await runInHelper({
    file,
    args,
    timeoutMs: opts.timeoutMs ?? 60_000,
    signal: opts.signal,
    input: opts.input,
    env: opts.env,
    extendEnv: opts.extendEnv,
    uid: opts.uid,
    gid: opts.gid,
  });
  if (res.failed) throw commandError(file, args, res, opts.failure);
  return res.stdout;
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
 * standard input read from a file. For decompressors: `xz -dc`, `zstd -dc`, `bzip2 -dc`. execa is
 * loaded with the first of them, not with the daemon (about 3 MiB of RSS a daemon at idle never needs);
 * the output arrives through `stdout` all the same, from the moment the command runs.
 */
export function runStreamCommand(
  file: string,
  args: readonly string[],
  opts: { stdinFile?: string; signal?: AbortSignal } = {},
): StreamCommand {
  const stdout = new PassThrough({ highWaterMark: 64 * 1024 });
  let stopped = false;
  let kill = () => {};
  const result = import('execa').then(async ({ execa }) => {
    if (stopped) return;
    const sub = execa(file, args, {
      stdin: opts.stdinFile ? { file: opts.stdinFile } : 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: { stdout: false, stderr: true },
      reject: false,
      cancelSignal: opts.signal,
      maxBuffer: { stderr: 64 * 1024 },
    });
    kill = () => {
      sub.stdout.destroy();
      sub.kill();
    };
    sub.stdout.on('error', (e) => stdout.destroy(e));
    sub.stdout.pipe(stdout);
    const res = await sub;
    if (!res.failed || stopped) return;
    throw commandError(file, args, res);
  });
  // Callers that stop early never look at `done`: keep an unobserved failure from crashing the process.
  result.catch(() => {});
  return {
    stdout,
    done: result,
    async stop() {
      stopped = true;
      stdout.destroy();
      kill();
      await result.catch(() => {});
    },
  };
}

/** SIGTERM, then SIGKILL after `graceMs` if it has not exited by then. */
function terminate(p: SpawnedProcess, graceMs: number): void {
  p.kill('SIGTERM');
  const force = setTimeout(() => p.kill('SIGKILL'), graceMs);
  void p.exited.then(() => clearTimeout(force));
}

/** A long-running command whose stdout is consumed line by line (`lxc-monitor`). */
export interface StreamCommandOptions {
  /** Aborting stops the command (SIGTERM, SIGKILL 5 s later) and resolves: a requested stop is not an error. */
  signal?: AbortSignal;
  onLine: (line: string) => void;
}

/**
 * Run `file args`, call `onLine` for each stdout line as it arrives, resolve when it exits cleanly or is
 * aborted (SIGTERM, SIGKILL 5 s later). It runs in the spawn helper, which ends what it started when svcd
 * goes; `setpriv --pdeathsig` (which then executes the command in place) also ends it with the helper: a
 * killed svcd must not leave a watcher behind for every restart.
 */
export async function streamCommand(file: string, args: readonly string[], opts: StreamCommandOptions): Promise<void> {
  if (opts.signal?.aborted) return;
  const p = await spawnStreamed('setpriv', ['--pdeathsig', 'KILL', '--', file, ...args], {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let stderr = '';
  p.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4096)));
  const onAbort = () => terminate(p, 5_000);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  // Aborted while it was being started: stop it now.
  if (opts.signal?.aborted) onAbort();
  let ended = false;
  void p.exited.then(() => (ended = true));
  try {
    for await (const line of createInterface({ input: p.stdout!, crlfDelay: Infinity })) opts.onLine(line);
    const exit = await p.exited;
    if (opts.signal?.aborted) return;
    if (exit.exitCode !== 0)
      throw commandError(file, args, { exitCode: exit.exitCode, stderr, shortMessage: `was killed by ${exit.signal}` });
  } catch (e) {
    // A line handler threw: the command is not left running unwatched.
    if (!ended) p.kill('SIGKILL');
    throw e;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

// --- interactive processes (exec, console) ------------------------------------------------

export type { ProcessExit, PtyProcess, StdioTarget, StreamedProcess as SpawnedProcess } from './spawn/spawn-helper.ts';

/** The child gets no part of svcd's environment (lxc-attach clears it inside anyway). */
const childEnv = () => ({ PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' });

/**
 * Start a long-running host command (argv array, never a shell string) with each standard stream a
 * pipe, the null device or appended to a file; nothing is buffered (the caller streams the pipes), no
 * timeout. For `lxc-attach` under exec. It runs in the spawn helper (no fork of svcd itself).
 */
export function spawnProcess(
  file: string,
  args: readonly string[],
  opts: { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget; cwd?: string; copyIn?: string },
): Promise<SpawnedProcess> {
  return spawnStreamed(file, args, { ...opts, env: childEnv() });
}

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows`; raw bytes, no decoding. In the spawn helper. */
export function spawnPty(
  file: string,
  args: readonly string[],
  opts: { cols: number; rows: number; cwd?: string; copyIn?: string },
): Promise<PtyProcess> {
  return spawnPtyStreamed(file, args, { ...opts, cwd: opts.cwd ?? '/', env: childEnv() });
}

// --- interactive --------------------------------------------------------------------------

/** A long-running command fed and read as raw bytes (`lxc-console`). */
export interface InteractiveCommand {
  /** Bytes the command wrote to its standard output. */
  onData(listener: (data: Buffer) => void): void;
  /** Called once when the command has exited; `stderr` is the tail of its standard error. */
  onExit(listener: (exit: { exitCode: number | undefined; stderr: string }) => void): void;
  write(data: Buffer): void;
  /** SIGTERM, then SIGKILL after 2 s if it is still there. */
  kill(): void;
}

/**
 * Run a host command with piped standard input and output (argv array, never a shell string);
 * bytes pass unchanged both ways. Standard error is kept (its last 4 KiB) for the exit report.
 */
export function spawnInteractiveCommand(file: string, args: readonly string[]): InteractiveCommand {
  // In the spawn helper (no fork of svcd itself); writes before it runs wait for it.
  const started = spawnStreamed(file, args, { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', env: childEnv() });
  let stderr = '';
  let killed = false;
  void started.then(
    (p) => {
      p.stderr!.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString('utf8')).slice(-4096);
      });
      p.stdin!.on('error', () => {});
      if (killed) p.kill('SIGTERM');
    },
    () => {},
  );
  const exited = started.then(
    async (p) => {
      // stderr's last bytes may come after the exit: the report waits for both
      const stderrEnded = new Promise<void>((resolve) => {
        if (p.stderr!.readableEnded) resolve();
        p.stderr!.once('end', resolve).once('close', resolve);
      });
      const e = await p.exited;
      await Promise.race([stderrEnded, new Promise((r) => setTimeout(r, 1_000))]);
      return { exitCode: e.exitCode, stderr: stderr.trim() };
    },
    (e: unknown) => ({ exitCode: undefined, stderr: e instanceof Error ? e.message : String(e) }),
  );
  return {
    onData: (l) =>
      void started.then(
        (p) => p.stdout!.on('data', (d: Buffer) => l(d)),
        () => {},
      ),
    onExit: (l) => void exited.then(l),
    write: (d) => {
      void started.then(
        (p) => {
          if (p.stdin!.writable) p.stdin!.write(d);
        },
        () => {},
      );
    },
    kill: () => {
      killed = true;
      void started.then(
        (p) => terminate(p, 2_000),
        () => {},
      );
    },
  };
}

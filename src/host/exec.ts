import { createInterface } from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import { classifyFailure, type FailureClassifier } from './command-failure.ts';
import { terminate } from './interactive-process.ts';
import { runInHelper, spawnStreamed } from './spawn/spawn-helper.ts';

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

// Interactive processes (exec, console) are in interactive-process.ts; their importers find them here too.
export {
  type InteractiveCommand,
  type ProcessExit,
  type PtyProcess,
  type SpawnedProcess,
  type StdioTarget,
  spawnInteractiveCommand,
  spawnProcess,
  spawnPty,
} from './interactive-process.ts';

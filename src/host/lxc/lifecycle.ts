/**
 * Runners for a container's power state: lxc-start / lxc-stop / lxc-freeze / lxc-unfreeze / lxc-info.
 * Every command goes through runCommand with an argv from lxcArgs; every runner takes an AbortSignal and
 * a timeout. Stopping, freezing and thawing are idempotent (already there is success).
 */
import { statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { HostCommandError, runCommand } from '../exec.ts';
import { readHostState } from './host-state.ts';
import { lxcArgs, parseLxcInfo, type ContainerState, type LxcRef, type LxcState } from './lxc-args.ts';
import { ContainerStartError } from './lxc-errors.ts';

export { ContainerStartError };

const POLL_MS = 100;

interface RunnerOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** The file's size, 0 when absent or unreadable. Synchronous: one stat before each start (see host/storage/fs-helpers.ts). */
function sizeOf(file: string | undefined): number {
  try {
    return (file && statSync(file, { throwIfNoEntry: false })?.size) || 0;
  } catch {
    return 0;
  }
}

/** The last `maxLines` lines written to `file` after byte `from` (a log appended to by every start). */
export async function readLogTail(file: string, from = 0, maxLines = 25): Promise<string> {
  const fh = await open(file, 'r').catch(() => undefined);
  if (!fh) return '';
  try {
    const { size } = await fh.stat();
    const start = Math.max(from, size - 64 * 1024);
    const buf = Buffer.alloc(Math.max(0, size - start));
    await fh.read(buf, 0, buf.length, start);
    return buf.toString('utf8').split('\n').filter(Boolean).slice(-maxLines).join('\n');
  } finally {
    await fh.close();
  }
}

/**
 * The container's state and init pid: from the host's records when they settle it (host-state.ts, no
 * process), else `lxc-info`. A container LXC does not know is STOPPED.
 */
export async function containerState(
  input: LxcRef & RunnerOptions & { monitorStarted?: boolean; listening?: ReadonlySet<string> },
): Promise<ContainerState> {
  const known = await readHostState(input).catch(() => undefined);
  if (known) return known;
  return lxcInfo(input);
}

/** The container's state and init pid as `lxc-info` reports them. */
export async function lxcInfo(input: LxcRef & RunnerOptions): Promise<ContainerState> {
  try {
    const out = await runCommand('lxc-info', lxcArgs.info(input), {
      signal: input.signal,
      timeoutMs: input.timeoutMs ?? 10_000,
    });
    return parseLxcInfo(out);
  } catch (e) {
    if (e instanceof HostCommandError && e.exitCode === 1 && /doesn't exist/.test(e.stderr))
      return { state: 'STOPPED' };
    throw e;
  }
}

/** Poll until the state is one of `want` (or, when given, one of `fail`), bounded by `timeoutMs`. */
async function waitForState(
  input: LxcRef & { signal?: AbortSignal; monitorStarted?: boolean },
  want: readonly LxcState[],
  timeoutMs: number,
  fail: readonly LxcState[] = [],
): Promise<ContainerState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await containerState(input);
    if (want.includes(s.state) || fail.includes(s.state)) return s;
    if (Date.now() >= deadline) return s;
    await sleep(POLL_MS, undefined, { signal: input.signal });
  }
}

export interface StartContainerInput extends LxcRef, RunnerOptions {
  /** The rendered config (`renderLxcConfig`); by LXC convention `<lxcPath>/<name>/config`. */
  configFile: string;
  /** The config's `lxc.log.file`, quoted in the error when the start fails. */
  logFile?: string;
  /** The caller has just seen it STOPPED: skip the first state read. */
  knownStopped?: boolean;
}

/**
 * `lxc-start -d`, then wait (default 30 s) until RUNNING. Resolves with the init pid; rejects with a
 * ContainerStartError carrying the LXC log lines this attempt wrote. Already running is success (the
 * config is not re-read: a changed config needs a stop first).
 */
export async function startContainer(input: StartContainerInput): Promise<ContainerState & { pid: number }> {
  const timeoutMs = input.timeoutMs ?? 30_000;
  const now = input.knownStopped ? { state: 'STOPPED' as const } : await containerState(input);
  if (now.state === 'RUNNING' && now.pid !== undefined) return { state: 'RUNNING', pid: now.pid };
  const logFrom = sizeOf(input.logFile);
  const fail = async (message: string, cause?: unknown): Promise<never> => {
    const tail = input.logFile ? await readLogTail(input.logFile, logFrom) : '';
    throw new ContainerStartError(message, tail, { cause });
  };
  try {
    await runCommand('lxc-start', lxcArgs.start(input, input.configFile), { signal: input.signal, timeoutMs });
  } catch (e) {
    if (input.signal?.aborted) throw e;
    await fail(`container ${input.name} failed to start: ${e instanceof Error ? e.message : String(e)}`, e);
  }
  const s = await waitForState({ ...input, monitorStarted: true }, ['RUNNING'], timeoutMs, ['STOPPED', 'ABORTING']);
  if (s.state !== 'RUNNING' || s.pid === undefined) {
    await fail(`container ${input.name} did not reach RUNNING within ${timeoutMs} ms (state ${s.state})`);
  }
  return { state: 'RUNNING', pid: s.pid! };
}

export interface StopContainerInput extends LxcRef, RunnerOptions {
  /** Kill every task right away instead of asking init to shut down. */
  force?: boolean;
}

/**
 * `lxc-stop -k`: kill every task (a frozen container too) and wait until LXC reports it STOPPED (lxc-stop
 * waits unless --nowait). One process: no state read before or after. Not running is success.
 */
async function killContainer(input: LxcRef & RunnerOptions): Promise<'done' | 'not-running'> {
  try {
    await runCommand('lxc-stop', lxcArgs.kill(input), { signal: input.signal, timeoutMs: input.timeoutMs ?? 45_000 });
    return 'done';
  } catch (e) {
    if (e instanceof HostCommandError && e.exitCode === 2) return 'not-running';
    throw e;
  }
}

/**
 * Stop the container. Clean (default): the halt signal to init, up to `timeoutMs` (default 30 s), then a
 * kill if it is still up; `forced` says whether it had to be killed. A frozen container is thawed
 * first. Already stopped is success.
 */
export async function stopContainer(input: StopContainerInput): Promise<{ forced: boolean }> {
  const timeoutMs = input.timeoutMs ?? 30_000;
  const opts = { signal: input.signal, timeoutMs: timeoutMs + 15_000 };
  /** lxc-stop exits 2 when the container is not running. */
  const run = async (args: string[]): Promise<'done' | 'not-running' | 'failed'> => {
    try {
      await runCommand('lxc-stop', args, opts);
      return 'done';
    } catch (e) {
      if (e instanceof HostCommandError && e.exitCode === 2) return 'not-running';
      if (input.signal?.aborted) throw e;
      // a clean shutdown that timed out (exit 1 with --nokill): the caller decides
      if (args.includes('--nokill')) return 'failed';
      throw e;
    }
  };
  const confirmStopped = async () => {
    const s = await waitForState(input, ['STOPPED'], 10_000);
    if (s.state !== 'STOPPED') throw new Error(`container ${input.name} is still ${s.state} after lxc-stop`);
  };
  if (input.force) return { forced: (await killContainer(input)) === 'done' };
  // a frozen init cannot act on the halt signal: thaw first
  const now = await containerState(input);
  if (now.state === 'STOPPED') return { forced: false };
  if (now.state === 'FROZEN' || now.state === 'FREEZING') await unfreezeContainer({ ...input, timeoutMs: 30_000 });
  const clean = await run(lxcArgs.shutdown(input, timeoutMs / 1000));
  if (clean === 'not-running') return { forced: false };
  if (clean === 'done' || (await containerState(input)).state === 'STOPPED') {
    await confirmStopped();
    return { forced: false };
  }
  return { forced: (await killContainer({ ...input, timeoutMs: 45_000 })) === 'done' };
}

/** Freeze every task of the container (`lxc-freeze`, which waits for FROZEN). */
export async function freezeContainer(input: LxcRef & RunnerOptions): Promise<void> {
  await runCommand('lxc-freeze', lxcArgs.freeze(input), { signal: input.signal, timeoutMs: input.timeoutMs ?? 30_000 });
}

/** Thaw a frozen container (`lxc-unfreeze`). */
export async function unfreezeContainer(input: LxcRef & RunnerOptions): Promise<void> {
  await runCommand('lxc-unfreeze', lxcArgs.unfreeze(input), {
    signal: input.signal,
    timeoutMs: input.timeoutMs ?? 30_000,
  });
}

/**
 * The parent side of the spawn helper (helper-process.mjs): one long-lived small process that runs
 * svcd's buffered host commands, so svcd's own large process is never forked for them. Started on
 * first use, started again if it dies (commands in flight then fail); it never keeps svcd alive.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface HelperResult {
  failed: boolean;
  stdout: string;
  stderr: string;
  exitCode?: number | undefined;
  timedOut: boolean;
  isCanceled: boolean;
  shortMessage?: string | undefined;
}

export interface HelperRun {
  file: string;
  args: readonly string[];
  timeoutMs: number;
  input?: string | Buffer | undefined;
  env?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

const HELPER = fileURLToPath(new URL('./helper-process.mjs', import.meta.url));

interface Pending {
  resolve: (r: HelperResult) => void;
  timer: NodeJS.Timeout;
  /** The helper process running it. */
  by: ChildProcess;
}

let child: ChildProcess | undefined;
let nextId = 1;
const pending = new Map<number, Pending>();

function settle(id: number, r: HelperResult): void {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
  clearTimeout(p.timer);
  if (pending.size === 0) unref();
  p.resolve(r);
}

function unref(): void {
  child?.unref();
  (child?.channel as { unref?: () => void } | undefined)?.unref?.();
}

function ref(): void {
  child?.ref();
  (child?.channel as { ref?: () => void } | undefined)?.ref?.();
}

function helper(): ChildProcess {
  if (child && child.connected) return child;
  // No --import tsx and no test-runner flags: the helper is plain JavaScript.
  const c = fork(HELPER, [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  c.on('message', (m: { type?: string; id?: number } & HelperResult) => {
    if (m?.type === 'result' && typeof m.id === 'number') settle(m.id, m);
  });
  const lost = () => {
    if (child === c) child = undefined;
    for (const [id, p] of [...pending]) if (p.by === c) settle(id, { failed: true, stdout: '', stderr: '', timedOut: false, isCanceled: false, shortMessage: 'the spawn helper process exited' });
  };
  c.on('exit', lost);
  c.on('error', lost);
  child = c;
  return c;
}

/** Run one command in the helper; resolves with execa-like result fields (never rejects). */
export function runInHelper(r: HelperRun): Promise<HelperResult> {
  return new Promise((resolve) => {
    if (r.signal?.aborted) return resolve({ failed: true, stdout: '', stderr: '', timedOut: false, isCanceled: true, shortMessage: 'cancelled' });
    const c = helper();
    const id = nextId++;
    // The helper enforces the timeout; this one only guards against a helper that stopped answering.
    const timer = setTimeout(() => settle(id, { failed: true, stdout: '', stderr: '', timedOut: true, isCanceled: false }), r.timeoutMs + 10_000);
    pending.set(id, { resolve, timer, by: c });
    ref();
    const onAbort = () => {
      if (pending.has(id) && c.connected) c.send({ type: 'cancel', id });
    };
    r.signal?.addEventListener('abort', onAbort, { once: true });
    const wrapped = pending.get(id)!;
    wrapped.resolve = (res) => {
      r.signal?.removeEventListener('abort', onAbort);
      resolve(res);
    };
    c.send({ type: 'run', id, file: r.file, args: [...r.args], timeoutMs: r.timeoutMs, input: r.input, env: r.env });
  });
}

/** Stop the helper (tests, daemon stop); the next command starts a new one. */
export function stopSpawnHelper(): void {
  child?.kill();
  child = undefined;
}

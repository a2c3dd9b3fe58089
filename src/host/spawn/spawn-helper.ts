/**
 * The parent side of the spawn helper (helper-process.mjs): one long-lived small process that runs
 * svcd's buffered host commands, so svcd's own large process is never forked for them. Started on
 * first use, started again if it dies (commands in flight then fail); it never keeps svcd alive.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { Readable, Writable } from 'node:stream';
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
  /** false: the command gets only `env`, not svcd's environment. */
  extendEnv?: boolean | undefined;
  uid?: number | undefined;
  gid?: number | undefined;
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

/** Streamed processes' message handlers by id, with the helper running them. */
const streams = new Map<number, { on: (m: StreamMessage) => void; by: ChildProcess }>();

function settle(id: number, r: HelperResult): void {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
  clearTimeout(p.timer);
  unrefWhenIdle();
  p.resolve(r);
}

function unrefWhenIdle(): void {
  if (pending.size === 0 && streams.size === 0) unref();
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
    else if (typeof m?.id === 'number') streams.get(m.id)?.on(m as unknown as StreamMessage);
  });
  const lost = () => {
    if (child === c) child = undefined;
    for (const s of [...streams.values()]) if (s.by === c) s.on({ type: 'lost' });
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
    const onAbort = () => {
      if (pending.has(id) && c.connected) c.send({ type: 'cancel', id });
    };
    r.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (res: HelperResult) => {
      r.signal?.removeEventListener('abort', onAbort);
      resolve(res);
    };
    pending.set(id, { resolve: done, timer, by: c });
    ref();
    c.send({ type: 'run', id, file: r.file, args: [...r.args], timeoutMs: r.timeoutMs, input: r.input, env: r.env, extendEnv: r.extendEnv ?? true, uid: r.uid, gid: r.gid });
  });
}

/** Stop the helper (tests, daemon stop); the next command starts a new one. */
export function stopSpawnHelper(): void {
  child?.kill();
  child = undefined;
}

// --- streamed processes (exec, console) -------------------------------------------------------

/** How a process ended: its exit code, or the name of the signal that killed it. */
export interface ProcessExit {
  exitCode?: number;
  signal?: string;
}

/** A standard stream of a streamed process: a pipe, the null device, or appended to a file. */
export type StdioTarget = 'pipe' | 'ignore' | { appendTo: string };

export interface StreamedProcess {
  pid: number;
  /** Present when that stream is a pipe. */
  stdin: Writable | null;
  stdout: Readable | null;
  stderr: Readable | null;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<ProcessExit>;
  kill(signal?: NodeJS.Signals): void;
}

/** A process under a pseudo-terminal: one byte stream both ways. */
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

type StreamMessage =
  | { type: 'spawned'; pid: number }
  | { type: 'spawn-error'; message: string }
  | { type: 'data'; fd: number; data: Uint8Array }
  | { type: 'eof'; fd: number }
  | { type: 'stdin-ack'; seq: number }
  | { type: 'exit'; exitCode: number | null; signal: string | number | null }
  | { type: 'lost' };

interface StreamOptions {
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  /** Run `file` from the helper's private copy of it, made in this root-only directory (see helper-process.mjs). */
  copyIn?: string | undefined;
}

const signalName = (s: string | number): string => (typeof s === 'string' ? s : (Object.entries(os.constants.signals).find(([, v]) => v === s)?.[0] ?? String(s)));

/** Start a streamed process in the helper; resolves once it runs (with its pid), rejects if it could not start. */
function startStreamed(spawnMsg: Record<string, unknown>, handlers: (m: StreamMessage) => void): Promise<{ pid: number; send: (m: Record<string, unknown>) => void }> {
  return new Promise((resolve, reject) => {
    const c = helper();
    const id = nextId++;
    const send = (m: Record<string, unknown>) => {
      if (c.connected) c.send({ ...m, id });
    };
    let started = false;
    streams.set(id, {
      by: c,
      on: (m) => {
        if (!started && m.type === 'spawned') {
          started = true;
          resolve({ pid: m.pid, send });
          return;
        }
        if (!started && (m.type === 'spawn-error' || m.type === 'lost')) {
          streams.delete(id);
          unrefWhenIdle();
          reject(new Error(m.type === 'lost' ? 'the spawn helper process exited' : m.message));
          return;
        }
        if (m.type === 'exit' || m.type === 'lost') {
          streams.delete(id);
          unrefWhenIdle();
        }
        handlers(m);
      },
    });
    ref();
    c.send({ ...spawnMsg, type: 'spawn', id });
  });
}

function exitOf(m: StreamMessage): ProcessExit | undefined {
  if (m.type === 'lost') return { signal: 'SIGKILL' };
  if (m.type !== 'exit') return undefined;
  return m.signal ? { signal: signalName(m.signal) } : { exitCode: m.exitCode ?? 1 };
}

/**
 * Start a long-running host command (argv array, never a shell string) in the helper, each standard
 * stream a pipe (relayed with backpressure), the null device or appended to a file. No timeout.
 */
export async function spawnStreamed(file: string, args: readonly string[], opts: StreamOptions & { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget }): Promise<StreamedProcess> {
  let send: (m: Record<string, unknown>) => void = () => {};
  let resolveExit!: (e: ProcessExit) => void;
  const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
  const paused = { 1: false, 2: false } as Record<number, boolean>;
  const readable = (fd: number) =>
    new Readable({
      highWaterMark: 256 * 1024,
      read() {
        if (paused[fd]) {
          paused[fd] = false;
          send({ type: 'resume', fd });
        }
      },
    });
  const stdout = opts.stdout === 'pipe' ? readable(1) : null;
  const stderr = opts.stderr === 'pipe' ? readable(2) : null;
  const outs: Record<number, Readable | null> = { 1: stdout, 2: stderr };
  let seq = 0;
  const acks = new Map<number, (e?: Error | null) => void>();
  const stdin =
    opts.stdin === 'pipe'
      ? new Writable({
          highWaterMark: 256 * 1024,
          write(chunk: Buffer, _enc, cb) {
            const n = ++seq;
            acks.set(n, cb);
            send({ type: 'stdin', seq: n, data: chunk });
          },
          final(cb) {
            send({ type: 'stdin-end' });
            cb();
          },
        })
      : null;
  stdin?.on('error', () => {});
  const endAll = () => {
    for (const cb of acks.values()) cb();
    acks.clear();
    for (const r of [stdout, stderr]) if (r && !r.readableEnded) r.push(null);
  };
  const started = await startStreamed({ file, args: [...args], cwd: opts.cwd, env: opts.env, copyIn: opts.copyIn, stdio: [opts.stdin, opts.stdout, opts.stderr] }, (m) => {
    switch (m.type) {
      case 'data': {
        const r = outs[m.fd];
        if (r && !r.push(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength)) && !paused[m.fd]) {
          paused[m.fd] = true;
          send({ type: 'pause', fd: m.fd });
        }
        return;
      }
      case 'eof':
        outs[m.fd]?.push(null);
        return;
      case 'stdin-ack':
        acks.get(m.seq)?.();
        acks.delete(m.seq);
        return;
    }
    const exit = exitOf(m);
    if (exit) {
      if (m.type === 'lost') endAll();
      for (const cb of acks.values()) cb();
      acks.clear();
      resolveExit(exit);
    }
  });
  send = started.send;
  return { pid: started.pid, stdin, stdout, stderr, exited, kill: (signal = 'SIGTERM') => send({ type: 'kill', signal }) };
}

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows` in the helper; raw bytes. */
export async function spawnPtyStreamed(file: string, args: readonly string[], opts: StreamOptions & { cols: number; rows: number }): Promise<PtyProcess> {
  let send: (m: Record<string, unknown>) => void = () => {};
  let resolveExit!: (e: ProcessExit) => void;
  const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
  const listeners: ((d: Buffer) => void)[] = [];
  // bytes that came before anyone listened
  const early: Buffer[] = [];
  let seq = 0;
  const started = await startStreamed({ file, args: [...args], cwd: opts.cwd, env: opts.env, copyIn: opts.copyIn, pty: { cols: opts.cols, rows: opts.rows } }, (m) => {
    if (m.type === 'data') {
      const d = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      if (listeners.length === 0) early.push(d);
      for (const l of listeners) l(d);
      return;
    }
    const exit = exitOf(m);
    if (exit) resolveExit(exit);
  });
  send = started.send;
  return {
    pid: started.pid,
    onData: (cb) => {
      listeners.push(cb);
      for (const d of early.splice(0)) cb(d);
    },
    write: (data) => send({ type: 'stdin', seq: ++seq, data }),
    resize: (cols, rows) => send({ type: 'resize', cols, rows }),
    pause: () => send({ type: 'pause', fd: 1 }),
    resume: () => send({ type: 'resume', fd: 1 }),
    exited,
    kill: (signal = 'SIGHUP') => send({ type: 'kill', signal }),
  };
}

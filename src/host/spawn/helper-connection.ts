/**
 * The parent side of the spawn helper (helper-process.mjs): one long-lived small process that runs
 * svcd's host commands, so svcd's own large process is never forked for them. Started on first use,
 * started again if it dies (commands in flight then fail); it never keeps svcd alive. Messages both
 * ways are those of protocol.ts.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HelperMessage, HelperResult, ParentMessage, SpawnMessage, StreamControlMessage, StreamMessage, WithoutId } from './protocol.ts';

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

/** What a streamed process's handler gets: the helper's messages about it, or `lost` when the helper died. */
export type StreamEvent = StreamMessage | { type: 'lost' };

/** A streamed process that runs: its pid, and how to send it control messages. */
export interface StartedStream {
  pid: number;
  send(m: WithoutId<StreamControlMessage>): void;
}

const HELPER = fileURLToPath(new URL('./helper-process.mjs', import.meta.url));

interface Pending {
  resolve: (r: HelperResult) => void;
  timer: NodeJS.Timeout;
  /** The helper process running it. */
  by: ChildProcess;
}

const failure = (over: Partial<HelperResult>): HelperResult => ({ failed: true, stdout: '', stderr: '', timedOut: false, isCanceled: false, ...over });

export function createHelperConnection() {
  let child: ChildProcess | undefined;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  /** Streamed processes' message handlers by id, with the helper running them. */
  const streams = new Map<number, { on: (m: StreamEvent) => void; by: ChildProcess }>();
  const post = (c: ChildProcess, m: ParentMessage) => c.send(m);

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
    // No --import tsx and no test-runner flags: the helper is plain JavaScript. A 1 MiB young generation
    // (V8's default grows to 16 MiB per semi-space and keeps it): the helper's messages are small.
    const c = fork(HELPER, [], { execArgv: ['--max-semi-space-size=1'], serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    c.on('message', (m: HelperMessage) => {
      if (m?.type === 'result' && typeof m.id === 'number') settle(m.id, m);
      else if (typeof m?.id === 'number') streams.get(m.id)?.on(m as StreamMessage);
    });
    const lost = () => {
      if (child === c) child = undefined;
      for (const s of [...streams.values()]) if (s.by === c) s.on({ type: 'lost' });
      for (const [id, p] of [...pending]) if (p.by === c) settle(id, failure({ shortMessage: 'the spawn helper process exited' }));
    };
    c.on('exit', lost);
    c.on('error', lost);
    child = c;
    return c;
  }

  return {
    /** Run one command in the helper; resolves with execa-like result fields (never rejects). */
    run(r: HelperRun): Promise<HelperResult> {
      return new Promise((resolve) => {
        if (r.signal?.aborted) return resolve(failure({ isCanceled: true, shortMessage: 'cancelled' }));
        const c = helper();
        const id = nextId++;
        // The helper enforces the timeout; this one only guards against a helper that stopped answering.
        const timer = setTimeout(() => settle(id, failure({ timedOut: true })), r.timeoutMs + 10_000);
        const onAbort = () => {
          if (pending.has(id) && c.connected) post(c, { type: 'cancel', id });
        };
        r.signal?.addEventListener('abort', onAbort, { once: true });
        const done = (res: HelperResult) => {
          r.signal?.removeEventListener('abort', onAbort);
          resolve(res);
        };
        pending.set(id, { resolve: done, timer, by: c });
        ref();
        post(c, { type: 'run', id, file: r.file, args: [...r.args], timeoutMs: r.timeoutMs, input: r.input, env: r.env, extendEnv: r.extendEnv ?? true, uid: r.uid, gid: r.gid });
      });
    },

    /**
     * Start a streamed process in the helper; resolves once it runs (with its pid), rejects if it could
     * not start. `on` then gets every later message about it, up to its exit (or `lost`).
     */
    startStreamed(spawn: Omit<SpawnMessage, 'id' | 'type'>, on: (m: StreamEvent) => void): Promise<StartedStream> {
      return new Promise((resolve, reject) => {
        const c = helper();
        const id = nextId++;
        const send = (m: WithoutId<StreamControlMessage>) => {
          if (c.connected) post(c, { ...m, id });
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
            on(m);
          },
        });
        ref();
        post(c, { ...spawn, type: 'spawn', id });
      });
    },

    /** Stop the helper (tests, daemon stop); the next command starts a new one. */
    stop(): void {
      child?.kill();
      child = undefined;
    },
  };
}
export type HelperConnection = ReturnType<typeof createHelperConnection>;

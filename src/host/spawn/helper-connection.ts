/**
 * The parent side of the spawn helper (src/host/native/svcd-spawn.c, built into .build/): one
 * long-lived small process that runs svcd's host commands, so svcd's own large process is never
 * forked for them. Started on first use, started again if it dies (commands in flight then fail); it
 * never keeps svcd alive. Messages both ways are those of protocol.ts, as the frames of frames.ts on a
 * socket that is the helper's fd 3.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { encodeFrame, FrameReader } from './frames.ts';
import type {
  HelperMessage,
  HelperResult,
  ParentMessage,
  SpawnMessage,
  StreamControlMessage,
  StreamMessage,
  WithoutId,
} from './protocol.ts';
import { inPackage } from '../../util/package-root.ts';

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

/** The helper binary: `.build/svcd-spawn` at the top of the checkout (SVCD_SPAWN overrides it, for packagers). */
export function spawnHelperPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVCD_SPAWN ?? inPackage('.build/svcd-spawn');
}

/** A running helper: the process and the socket to it. */
interface Helper {
  proc: ChildProcess;
  sock: Socket;
  alive: boolean;
}

interface Pending {
  resolve: (r: HelperResult) => void;
  timer: NodeJS.Timeout;
  /** The helper process running it. */
  by: Helper;
  file: string;
}

const failure = (over: Partial<HelperResult>): HelperResult => ({
  failed: true,
  stdout: '',
  stderr: '',
  timedOut: false,
  isCanceled: false,
  ...over,
});

export function createHelperConnection() {
  let child: Helper | undefined;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  /** Streamed processes' message handlers by id, with the helper running them. */
  const streams = new Map<number, { on: (m: StreamEvent) => void; by: Helper; file: string }>();
  const post = (c: Helper, m: ParentMessage) => {
    if (c.alive) c.sock.write(encodeFrame(m));
  };

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
    child?.proc.unref();
    child?.sock.unref();
  }

  function ref(): void {
    child?.proc.ref();
    child?.sock.ref();
  }

  function helper(): Helper {
    if (child?.alive) return child;
    // The helper's environment is svcd's: a command run with extendEnv gets it, as before.
    const proc = spawn(spawnHelperPath(), [], { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] });
    const c: Helper = { proc, sock: proc.stdio[3] as Socket, alive: true };
    const reader = new FrameReader(
      (m: HelperMessage) => {
        if (m.type === 'result') settle(m.id, m);
        else streams.get(m.id)?.on(m);
      },
      (id) => pending.get(id)?.file ?? streams.get(id)?.file ?? '',
    );
    c.sock.on('data', (d: Buffer) => reader.push(d));
    const lost = (why = 'the spawn helper process exited') => {
      if (!c.alive) return;
      c.alive = false;
      if (child === c) child = undefined;
      c.sock.destroy();
      for (const s of [...streams.values()]) if (s.by === c) s.on({ type: 'lost' });
      for (const [id, p] of [...pending]) if (p.by === c) settle(id, failure({ shortMessage: why }));
    };
    // The socket ends when the helper exits, and its last frames come before that end.
    c.sock.on('close', () => lost());
    c.sock.on('error', () => {});
    proc.on('exit', () => {
      // A helper that exited may still have frames on their way: the socket's close settles them.
      setTimeout(() => lost(), 1_000).unref();
    });
    proc.on('error', (e) => lost(`the spawn helper ${spawnHelperPath()} could not run: ${e.message}`));
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
          if (pending.has(id)) post(c, { type: 'cancel', id });
        };
        r.signal?.addEventListener('abort', onAbort, { once: true });
        const done = (res: HelperResult) => {
          r.signal?.removeEventListener('abort', onAbort);
          resolve(res);
        };
        pending.set(id, { resolve: done, timer, by: c, file: r.file });
        ref();
        post(c, {
          type: 'run',
          id,
          file: r.file,
          args: [...r.args],
          timeoutMs: r.timeoutMs,
          input: r.input,
          env: r.env,
          extendEnv: r.extendEnv ?? true,
          uid: r.uid,
          gid: r.gid,
        });
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
        const send = (m: WithoutId<StreamControlMessage>) => post(c, { ...m, id } as ParentMessage);
        let started = false;
        streams.set(id, {
          by: c,
          file: spawn.file,
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
      child?.proc.kill();
      child = undefined;
    },
  };
}
export type HelperConnection = ReturnType<typeof createHelperConnection>;

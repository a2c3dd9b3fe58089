import { Readable, Writable } from 'node:stream';
import type { HelperConnection, StartedStream } from './helper-connection.ts';
import { processExit, type ProcessExit } from './process-exit.ts';
import type { StdioTarget } from './protocol.ts';

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

export interface StreamOptions {
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  /** Run `file` from the helper's private copy of it, made in this root-only directory (see private_copy in svcd-spawn.c). */
  copyIn?: string | undefined;
}

/**
 * Start a long-running host command (argv array, never a shell string) in the helper, each standard
 * stream a pipe (relayed with backpressure), the null device or appended to a file. No timeout.
 */
/** Bytes of standard input written but not yet acknowledged by the helper, at most. */
const STDIN_WINDOW = 1024 * 1024;

export async function spawnStreamed(
  helper: Pick<HelperConnection, 'startStreamed'>,
  file: string,
  args: readonly string[],
  opts: StreamOptions & { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget },
): Promise<StreamedProcess> {
  let send: StartedStream['send'] = () => {};
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
  // Writes are acknowledged once the helper wrote them to the pipe. Up to STDIN_WINDOW bytes may be on their
  // way (the helper queues them): one chunk at a time would cost a round trip per chunk, which bounds a bulk
  // stream (rsync's) to a few tens of MB/s on a loaded host.
  const acks = new Map<number, { bytes: number; cb?: (e?: Error | null) => void }>();
  let inflight = 0;
  const stdin =
    opts.stdin === 'pipe'
      ? new Writable({
          highWaterMark: 256 * 1024,
          write(chunk: Buffer, _enc, cb) {
            const n = ++seq;
            inflight += chunk.length;
            const early = inflight <= STDIN_WINDOW;
            acks.set(n, { bytes: chunk.length, ...(early ? {} : { cb }) });
            send({ type: 'stdin', seq: n, data: chunk });
            if (early) cb();
          },
          final(cb) {
            send({ type: 'stdin-end' });
            cb();
          },
        })
      : null;
  stdin?.on('error', () => {});
  const releaseAll = () => {
    for (const a of acks.values()) a.cb?.();
    acks.clear();
    inflight = 0;
  };
  const endAll = () => {
    releaseAll();
    for (const r of [stdout, stderr]) if (r && !r.readableEnded) r.push(null);
  };
  const started = await helper.startStreamed(
    {
      file,
      args: [...args],
      cwd: opts.cwd,
      env: opts.env,
      copyIn: opts.copyIn,
      stdio: [opts.stdin, opts.stdout, opts.stderr],
    },
    (m) => {
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
        case 'stdin-ack': {
          const a = acks.get(m.seq);
          acks.delete(m.seq);
          if (a) {
            inflight -= a.bytes;
            a.cb?.();
          }
          return;
        }
      }
      const exit = processExit(m);
      if (exit) {
        if (m.type === 'lost') endAll();
        releaseAll();
        resolveExit(exit);
      }
    },
  );
  send = started.send;
  return {
    pid: started.pid,
    stdin,
    stdout,
    stderr,
    exited,
    kill: (signal = 'SIGTERM') => send({ type: 'kill', signal }),
  };
}

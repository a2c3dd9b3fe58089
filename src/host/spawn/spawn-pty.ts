import type { HelperConnection, StartedStream } from './helper-connection.ts';
import { processExit, type ProcessExit } from './process-exit.ts';
import type { StreamOptions } from './spawn-streamed.ts';

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

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows` in the helper; raw bytes. */
export async function spawnPty(
  helper: Pick<HelperConnection, 'startStreamed'>,
  file: string,
  args: readonly string[],
  opts: StreamOptions & { cols: number; rows: number },
): Promise<PtyProcess> {
  let send: StartedStream['send'] = () => {};
  let resolveExit!: (e: ProcessExit) => void;
  const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
  const listeners: ((d: Buffer) => void)[] = [];
  // bytes that came before anyone listened
  const early: Buffer[] = [];
  let seq = 0;
  const started = await helper.startStreamed(
    {
      file,
      args: [...args],
      cwd: opts.cwd,
      env: opts.env,
      copyIn: opts.copyIn,
      pty: { cols: opts.cols, rows: opts.rows },
    },
    (m) => {
      if (m.type === 'data') {
        const d = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
        if (listeners.length === 0) early.push(d);
        for (const l of listeners) l(d);
        return;
      }
      const exit = processExit(m);
      if (exit) resolveExit(exit);
    },
  );
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

import type { WebSocket } from 'ws';
import type { InteractiveCommand } from './host-service.ts';

/** How long the client has to connect the data websocket after the operation was created. */
export const CONSOLE_CONNECT_TIMEOUT_MS = 30_000;

const toBuffer = (msg: Buffer | ArrayBuffer | Buffer[]): Buffer =>
  Array.isArray(msg) ? Buffer.concat(msg) : Buffer.isBuffer(msg) ? msg : Buffer.from(msg);

/** lxc-console's complaint in words a client understands (its last stderr line otherwise). */
function consoleError(stderr: string): string | undefined {
  if (/Denied access to tty/.test(stderr))
    return 'another client is attached to this console (LXC allows one at a time)';
  if (/is not running/.test(stderr)) return 'the container is not running';
  return stderr.split('\n').pop()?.trim() || undefined;
}

export interface ConsoleSessionOptions {
  /** Start the console client (called once, when the data websocket connects). */
  open(): InteractiveCommand;
  signal: AbortSignal;
  connectTimeoutMs?: number;
}

/**
 * One console attachment, websocket side (fds `0` and `control`, as LXD):
 * - `0`: console bytes both ways in binary frames; a client's text frame is input too, except an
 *   empty one, which is its end-of-input marker (the console stays attached: only closing detaches).
 * - `control`: JSON messages such as `{command: "window-resize", args: {width, height}}` are read
 *   and ignored: liblxc 5.0 cannot pass a client's size on to the container's console (console.ts).
 * It ends (resolves) when the client closes either socket (detach), when the console command
 * exits (console gone: the container stopped), or on abort; then the command is killed and both
 * sockets are closed. It rejects when the client never connects, or when the command fails before
 * the client detached (with lxc-console's own error, in words a client understands).
 */
export function createConsoleSession(opts: ConsoleSessionOptions) {
  let data: WebSocket | undefined;
  let control: WebSocket | undefined;
  let term: InteractiveCommand | undefined;
  let settled = false;
  let resolveDone!: () => void;
  let rejectDone!: (e: Error) => void;
  const done = new Promise<void>((res, rej) => {
    resolveDone = res;
    rejectDone = rej;
  });

  const connectTimer = setTimeout(
    () => finish(new Error('Timed out waiting for the console websocket to connect')),
    opts.connectTimeoutMs ?? CONSOLE_CONNECT_TIMEOUT_MS,
  );
  const onAbort = () => finish();
  opts.signal.addEventListener('abort', onAbort, { once: true });

  /** Resolves once the console command has exited (LXC frees the console only then). */
  let termGone: Promise<void> = Promise.resolve();

  function finish(error?: Error) {
    if (settled) return;
    settled = true;
    clearTimeout(connectTimer);
    opts.signal.removeEventListener('abort', onAbort);
    term?.kill();
    for (const ws of [data, control]) if (ws && ws.readyState === ws.OPEN) ws.close(1000, 'console detached');
    // The session ends when the command is gone, so a client attaching next finds the console free.
    void termGone.then(() => (error ? rejectDone(error) : resolveDone()));
  }

  function attachData(ws: WebSocket) {
    data = ws;
    clearTimeout(connectTimer);
    try {
      term = opts.open();
    } catch (e) {
      return finish(e instanceof Error ? e : new Error(String(e)));
    }
    termGone = new Promise((resolve) => term!.onExit(() => resolve()));
    term.onData((chunk) => {
      if (ws.readyState === ws.OPEN) ws.send(chunk, { binary: true });
    });
    term.onExit(({ exitCode, stderr }) => {
      term = undefined;
      finish(
        exitCode === 0 || settled
          ? undefined
          : new Error(
              `The console could not be attached: ${consoleError(stderr) || `lxc-console exited with ${exitCode}`}`,
            ),
      );
    });
    ws.on('message', (msg: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      const buf = toBuffer(msg);
      if (!isBinary && buf.length === 0) return;
      term?.write(buf);
    });
    ws.on('close', () => finish());
    ws.on('error', () => finish());
  }

  function attachControl(ws: WebSocket) {
    control = ws;
    // Control messages (window-resize) are drained and ignored: see above.
    ws.on('message', () => {});
    ws.on('close', () => finish());
    ws.on('error', () => finish());
  }

  return {
    done,
    /** The websocket handler for `ops.websockets.register`. */
    onSocket(fd: string, socket: unknown) {
      const ws = socket as WebSocket;
      if (settled) return ws.close(1000, 'console session has ended');
      if (fd === '0') attachData(ws);
      else if (fd === 'control') attachControl(ws);
      else ws.close(1008, 'unknown fd');
    },
  };
}

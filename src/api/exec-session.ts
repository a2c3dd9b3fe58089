/**
 * The websocket side of `POST /1.0/containers/<name>/exec` with wait-for-websocket: the client's
 * sockets (`0`, `1`, `2`, `control`; interactive: `0`, `control`) are bridged to a command running
 * under lxc-attach. Wire rules (CLIENT-COMPAT "Exec"): data frames are binary; an empty text frame
 * is end-of-stream in both directions; after the command exits its output sockets are ended.
 */
import type { Readable, Writable } from 'node:stream';
import type { WebSocket, RawData } from 'ws';
import type { PipedAttach, PtyAttach } from './host-service.ts';

/** Bytes queued on a socket past which the command's output is paused until the client catches up. */
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/**
 * After the command exited, its output pipes are drained until they end, or until nothing moved
 * for this long (a background process it left behind may hold them open forever).
 */
const STALL_MS = 1_000;

type Frame = { data: Buffer; binary: boolean };

/** One client socket: frames received before anyone listens are kept and replayed. */
class Peer {
  private queue: Frame[] = [];
  private onFrame: ((f: Frame) => void) | undefined;
  private onGone: ((code: number) => void) | undefined;
  closedWith: number | undefined;
  pending = 0;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: RawData, binary: boolean) => {
      const f = { data: toBuffer(data), binary };
      if (this.onFrame) this.onFrame(f);
      else this.queue.push(f);
    });
    ws.on('close', (code: number) => {
      this.closedWith = code;
      this.onGone?.(code);
    });
    ws.on('error', () => {});
  }

  listen(onFrame: (f: Frame) => void, onGone: (code: number) => void): void {
    this.onFrame = onFrame;
    this.onGone = onGone;
    for (const f of this.queue.splice(0)) onFrame(f);
    if (this.closedWith !== undefined) onGone(this.closedWith);
  }

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  /** Send a binary frame; `pause`/`resume` the source around the high/low water marks. */
  send(data: Buffer, flow: { pause(): void; resume(): void; touched(): void }): void {
    if (!this.open) return; // the client went away: its output is dropped, the command goes on
    this.pending += data.length;
    if (this.pending > HIGH_WATER) flow.pause();
    this.ws.send(data, { binary: true }, () => {
      this.pending -= data.length;
      flow.touched();
      if (this.pending <= LOW_WATER) flow.resume();
    });
  }

  /** End of stream: an empty text frame. */
  sendEof(): void {
    if (this.open) this.ws.send('', { binary: false });
  }

  close(): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(1000);
  }
}

const toBuffer = (d: RawData): Buffer =>
  Buffer.isBuffer(d) ? d : Array.isArray(d) ? Buffer.concat(d) : Buffer.from(d);

/** The sockets of one exec operation, as they connect. */
export class ExecSockets {
  private peers = new Map<string, Peer>();
  private waiting: (() => void) | undefined;
  private over = false;
  /** Called when the control socket connects (it may come at any time, or never). */
  onControl: ((p: Peer) => void) | undefined;

  constructor(readonly dataFds: readonly string[]) {}

  /** Called by the websocket upgrade for each claimed secret. */
  attach(fd: string, ws: WebSocket): void {
    const peer = new Peer(ws);
    // A socket claimed between the end of the exec and the revocation of its secrets.
    if (this.over) return peer.close();
    this.peers.set(fd, peer);
    if (fd === 'control') this.onControl?.(peer);
    if (this.allData()) this.waiting?.();
  }

  private allData = () => this.dataFds.every((fd) => this.peers.has(fd));

  peer(fd: string): Peer | undefined {
    return this.peers.get(fd);
  }

  /** Resolve once every data socket is connected; reject after `timeoutMs` or on abort. */
  waitForData(timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.allData()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.waiting = undefined;
        if (err) reject(err);
        else resolve();
      };
      const onAbort = () => done(signal.reason instanceof Error ? signal.reason : new Error('operation cancelled'));
      const timer = setTimeout(() => {
        const missing = this.dataFds.filter((fd) => !this.peers.has(fd));
        done(
          new Error(
            `Timed out after ${timeoutMs / 1000} s waiting for the websocket${missing.length > 1 ? 's' : ''} of fd ${missing.join(', ')}: the command was not started`,
          ),
        );
      }, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting = () => done();
    });
  }

  /** Close every socket (normal closure), and any that connects later. */
  closeAll(): void {
    this.over = true;
    for (const p of this.peers.values()) p.close();
  }
}

type Attached = PipedAttach | PtyAttach;

/** A control message: `{command: "window-resize", args: {width, height}}` or `{command: "signal", signal: N}`. */
function handleControl(frame: Frame, proc: Attached, log: (msg: string) => void): void {
  let msg: { command?: unknown; args?: { width?: unknown; height?: unknown }; signal?: unknown };
  try {
    msg = JSON.parse(frame.data.toString('utf8'));
  } catch {
    return log('ignoring a control message that is not JSON');
  }
  if (msg?.command === 'window-resize') {
    const cols = Number(msg.args?.width);
    const rows = Number(msg.args?.height);
    if (!('resize' in proc)) return; // pipes have no window
    if (Number.isInteger(cols) && Number.isInteger(rows) && cols > 0 && rows > 0 && cols <= 0xffff && rows <= 0xffff)
      proc.resize(cols, rows);
    else log(`ignoring a window-resize to ${String(msg.args?.width)}x${String(msg.args?.height)}`);
  } else if (msg?.command === 'signal') {
    const sig = Number(msg.signal);
    if (Number.isInteger(sig) && sig >= 1 && sig <= 64) void proc.signal(sig);
    else log(`ignoring a signal request for ${String(msg.signal)}`);
  } else log(`ignoring the control command ${JSON.stringify(msg?.command)}`);
}

/**
 * Follow the control socket, now or when it connects. The client vanishing from it (abnormal
 * closure, not a close frame) kills the command, as LXD does.
 */
function followControl(
  sockets: ExecSockets,
  proc: Attached,
  exited: { done: boolean },
  log: (msg: string) => void,
): void {
  const follow = (p: Peer) =>
    p.listen(
      (f) => handleControl(f, proc, log),
      (code) => {
        if (code === 1006 && !exited.done) void proc.signal(9);
      },
    );
  const now = sockets.peer('control');
  if (now) follow(now);
  else sockets.onControl = follow;
}

export interface BridgeOptions {
  log: (msg: string) => void;
  /** Aborted when svcd stops: the command is killed. */
  signal: AbortSignal;
}

function killOnAbort(proc: Attached, signal: AbortSignal, exited: { done: boolean }): void {
  const kill = () => {
    if (!exited.done) void proc.signal(9);
  };
  if (signal.aborted) kill();
  else signal.addEventListener('abort', kill, { once: true });
  void proc.status.then(() => signal.removeEventListener('abort', kill));
}

/** Pipe a process output stream to a socket; resolves when the stream ended (or was given up). */
function pump(stream: Readable, peer: Peer, activity: { at: number }): { ended: Promise<void>; stop(): void } {
  let resolveEnd!: () => void;
  const ended = new Promise<void>((r) => (resolveEnd = r));
  const flow = {
    pause: () => stream.pause(),
    resume: () => stream.resume(),
    touched: () => (activity.at = Date.now()),
  };
  stream.on('data', (chunk: Buffer) => {
    activity.at = Date.now();
    peer.send(chunk, flow);
  });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    peer.sendEof();
    resolveEnd();
  };
  stream.once('end', finish);
  stream.once('error', finish);
  return {
    ended,
    stop: () => {
      stream.destroy();
      finish();
    },
  };
}

/** Wait for `ended` after the exit, giving up once output stopped moving for STALL_MS. */
async function drain(ended: Promise<unknown>, activity: { at: number }, giveUp: () => void): Promise<void> {
  let over = false;
  void ended.then(() => (over = true));
  activity.at = Math.max(activity.at, Date.now());
  while (!over) {
    await Promise.race([ended, new Promise((r) => setTimeout(r, 100))]);
    if (!over && Date.now() - activity.at > STALL_MS) {
      giveUp();
      over = true;
    }
  }
}

/** Bridge a piped command (fds 0, 1, 2) until it exited and its output was sent; returns its status. */
export async function bridgePipes(sockets: ExecSockets, proc: PipedAttach, opts: BridgeOptions): Promise<number> {
  const exited = { done: false };
  const log = opts.log;
  followControl(sockets, proc, exited, log);
  killOnAbort(proc, opts.signal, exited);
  const stdin = proc.stdin as Writable;
  stdin.on('error', () => {}); // EPIPE once the command stopped reading
  const input = sockets.peer('0')!;
  // A command reading slower than the client sends: stop reading the socket until the pipe drained.
  stdin.on('drain', () => input.ws.resume());
  input.listen(
    (f) => {
      if (!f.binary && f.data.length === 0) stdin.end();
      else if (!stdin.writableEnded && !stdin.write(f.data)) input.ws.pause();
    },
    () => stdin.end(),
  );
  const activity = { at: Date.now() };
  const out = pump(proc.stdout!, sockets.peer('1')!, activity);
  const err = pump(proc.stderr!, sockets.peer('2')!, activity);
  const status = await proc.status;
  exited.done = true;
  await drain(Promise.all([out.ended, err.ended]), activity, () => {
    out.stop();
    err.stop();
  });
  sockets.closeAll();
  return status;
}

/** Bridge an interactive command (fd 0 is the PTY both ways) until it exited; returns its status. */
export async function bridgePty(sockets: ExecSockets, proc: PtyAttach, opts: BridgeOptions): Promise<number> {
  const exited = { done: false };
  const log = opts.log;
  followControl(sockets, proc, exited, log);
  killOnAbort(proc, opts.signal, exited);
  const peer = sockets.peer('0')!;
  const flow = { pause: () => proc.pause(), resume: () => proc.resume(), touched: () => {} };
  proc.onData((d) => peer.send(d, flow));
  peer.listen(
    (f) => {
      // End of input on a terminal is what Ctrl-D sends.
      if (!f.binary && f.data.length === 0) proc.write(Buffer.from([4]));
      else proc.write(f.data);
    },
    () => {
      // The terminal went away: hang up, as a closing terminal does.
      if (!exited.done) void proc.signal(1);
    },
  );
  const status = await proc.status;
  exited.done = true;
  peer.sendEof();
  sockets.closeAll();
  return status;
}

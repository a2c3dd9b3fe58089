import { Duplex, Readable, Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';

/**
 * Framing of LXD's migration websockets. On the fs channel binary messages carry the bytes of a
 * stream (rsync's stdio, a btrfs send stream) and a text message ends it: LXD sends an empty one (the
 * "barrier") when its side of a stream is done, and reads any text message as end of stream. One
 * socket carries several streams in turn (one per snapshot, then the volume), so the channel owns the
 * socket's messages and hands them to one stream session at a time. On the control channel each
 * protobuf message is one binary websocket message.
 */

const toBuffer = (data: RawData): Buffer =>
  Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);

type Frame = { data: Buffer } | { barrier: true } | { closed: Error | null };

/** Above this many queued or unsent bytes the sender waits (a slow rsync must not fill svcd's memory). */
const HIGH_WATER = 1024 * 1024;

export class FsChannel {
  private readonly frames: Frame[] = [];
  private queued = 0;
  private current: Readable | undefined;
  /** The current stream must end at a barrier: a socket closed before it is a cut stream, not its end. */
  private strict = false;
  /** The session's reader asked for more (its read() ran) and push has not said stop since. */
  private wanted = false;

  constructor(private readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => this.enqueue(isBinary ? { data: toBuffer(data) } : { barrier: true }));
    ws.on('close', () => this.enqueue({ closed: null }));
    ws.on('error', (e) => this.enqueue({ closed: e }));
  }

  private enqueue(frame: Frame): void {
    this.frames.push(frame);
    if ('data' in frame) this.queued += frame.data.length;
    // the socket stops being read while nobody consumes: TCP then slows the peer down
    if (this.queued > HIGH_WATER) this.ws.pause();
    this.flush();
  }

  private flush(): void {
    const s = this.current;
    if (!s) return;
    while (this.frames.length > 0) {
      if (!this.wanted && 'data' in this.frames[0]!) break;
      const frame = this.frames[0]!;
      if ('closed' in frame) {
        // a closed socket ends every later session too: the frame stays queued
        this.current = undefined;
        if (frame.closed) s.destroy(frame.closed);
        else if (this.strict) s.destroy(new Error('the migration peer hung up before the end of the stream'));
        else s.push(null);
        return;
      }
      this.frames.shift();
      if ('barrier' in frame) {
        this.current = undefined;
        s.push(null);
        return;
      }
      this.queued -= frame.data.length;
      if (!s.push(frame.data)) this.wanted = false;
    }
    if (this.queued <= HIGH_WATER) this.ws.resume();
  }

  /**
   * One stream over the channel: reads end at the peer's barrier, and ending the writable side sends
   * ours. Sessions follow each other; the next one starts where the previous barrier left off.
   */
  session(): Duplex {
    const stream = new Duplex({
      read: () => this.wantMore(),
      write: (chunk: Buffer, _enc, done) => this.write(stream, chunk, done),
      final: (done) => this.barrier(done),
    });
    return this.attach(stream);
  }

  /**
   * A stream one way only, from the peer (a btrfs send stream, a JSON header frame): reads end at the
   * peer's barrier, and no barrier goes back (LXD's sender of such a stream reads nothing). A socket
   * closed before the barrier fails the stream: `btrfs receive` cannot tell a cut stream from a whole one.
   */
  inbound(): Readable {
    return this.attach(new Readable({ read: () => this.wantMore() }), true);
  }

  /** A stream one way only, to the peer: ending it sends the barrier; the peer sends nothing back. */
  outbound(): Writable {
    const ws = this.ws;
    // a socket gone mid-stream fails the stream, also while a write waits for the socket to drain
    const gone = () => stream.destroy(new Error('the migration websocket is closed'));
    const stream = new Writable({
      write: (chunk: Buffer, _enc, done) => this.write(stream, chunk, done),
      final: (done) => this.barrier(done),
    });
    ws.once('close', gone);
    stream.once('close', () => ws.off('close', gone));
    return stream;
  }

  private attach<T extends Readable>(stream: T, strict = false): T {
    if (this.current) throw new Error('an fs stream session is already open on this channel');
    this.current = stream;
    this.strict = strict;
    this.wanted = false;
    queueMicrotask(() => this.flush());
    return stream;
  }

  private wantMore(): void {
    this.wanted = true;
    this.flush();
  }

  private write(stream: Writable, chunk: Buffer, done: (e?: Error | null) => void): void {
    const ws = this.ws;
    if (ws.readyState !== ws.OPEN) return done(new Error('the migration websocket is closed'));
    // wait for the socket only when its buffer is full: ws's bufferedAmount is what is not yet sent
    if (ws.bufferedAmount >= HIGH_WATER) return ws.send(chunk, { binary: true }, (e) => done(e ?? null));
    ws.send(chunk, { binary: true }, (e) => {
      if (e) stream.destroy(e);
    });
    done();
  }

  private barrier(done: (e?: Error | null) => void): void {
    const ws = this.ws;
    if (ws.readyState !== ws.OPEN) return done(new Error('the migration websocket is closed'));
    ws.send('', { binary: false }, (e) => done(e ?? null));
  }
}

/** The control channel: one protobuf message per binary websocket message, both ways. */
export class ControlChannel {
  private readonly messages: Buffer[] = [];
  private waiting: { resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  private ended: Error | undefined;

  constructor(private readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (!isBinary) return this.end(new Error('the migration peer sent a text message on the control channel'));
      this.messages.push(toBuffer(data));
      this.deliver();
    });
    ws.on('close', (code) => this.end(new Error(`the migration peer closed the control channel (${code})`)));
    ws.on('error', (e) => this.end(e));
  }

  private end(e: Error): void {
    this.ended ??= e;
    this.deliver();
  }

  private deliver(): void {
    const w = this.waiting;
    if (!w) return;
    const next = this.messages.shift();
    if (next) {
      this.waiting = undefined;
      w.resolve(next);
    } else if (this.ended) {
      this.waiting = undefined;
      w.reject(this.ended);
    }
  }

  /** The next message's bytes (decode with migration-codec); rejects once the channel is gone. */
  receive(): Promise<Buffer> {
    if (this.waiting) return Promise.reject(new Error('a control message is already awaited'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.deliver();
    });
  }

  send(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => this.ws.send(bytes, { binary: true }, (e) => (e ? reject(e) : resolve())));
  }
}

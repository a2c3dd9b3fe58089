import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Duplex, type Readable, type Writable } from 'node:stream';
import { type SpawnedProcess, spawnProcess } from '../exec.ts';
import { btrfsArgs } from '../storage/btrfs-args.ts';
import { withEarlyWriteback } from './early-writeback.ts';
import { stdioSocket } from './stdio-socket.ts';
import type { FsChannel } from './ws-frames.ts';

/**
 * btrfs send/receive over the fs channel, as LXD 5.0.2 frames it: each subvolume is one `btrfs send
 * [-p parent]` stream in binary messages, closed by a barrier from the sender; the receiver sends
 * nothing back. The JSON header before the streams is one more such frame.
 */

export interface StreamOptions {
  signal: AbortSignal;
  /** Bytes of this stream so far (fs_progress). */
  onBytes?: (total: number) => void;
}

class BtrfsStreamFailed extends Error {
  constructor(role: string, code: number | undefined, stderr: string) {
    super(
      `btrfs ${role} failed${code !== undefined ? ` with exit code ${code}` : ''}: ${stderr.trim() || 'no output'}`,
    );
    this.name = 'BtrfsStreamFailed';
  }
}

const tail = (s: string) => (s.length > 4096 ? s.slice(-4096) : s);

const counter = (onBytes: ((n: number) => void) | undefined) => {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      onBytes?.(total);
      done(null, chunk);
    },
  });
};

const broke = (e: Error) => new Error(`the migration stream broke: ${e.message}`);

/** One frame to the peer (the JSON header), closed by a barrier. */
export async function sendFrame(channel: FsChannel, bytes: Uint8Array): Promise<void> {
  const out = channel.outbound();
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(bytes, () => resolve());
  });
}

/** The peer's next frame, up to its barrier, at most `limit` bytes. */
export async function receiveFrame(channel: FsChannel, limit = 16 * 1024 * 1024): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  const input = channel.inbound();
  for await (const c of input as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) {
      input.destroy();
      throw new Error(`the migration peer's header frame is over ${limit} bytes`);
    }
    parts.push(c);
  }
  return Buffer.concat(parts);
}

/**
 * Send the read-only subvolume at `p` as one stream, incremental on `parent` (a read-only subvolume the
 * receiver has: the snapshot sent before). The barrier goes only after `btrfs send` succeeded: a stream
 * cut short must never look whole to the receiver.
 */
export async function sendSubvolume(
  channel: FsChannel,
  p: string,
  parent: string | undefined,
  o: StreamOptions,
): Promise<void> {
  o.signal.throwIfAborted();
  await withSocketStream('send', btrfsArgs.send(p, parent), (proc, data, stderr) =>
    sendFrom(channel, proc, data, o, stderr),
  );
}

/**
 * `btrfs <args>` with its stdout (send) or stdin (receive) a connection to a socket svcd listens on
 * (stdio-socket.ts), its stderr kept for the error: `use` streams through that connection.
 */
async function withSocketStream(
  role: 'send' | 'receive',
  args: string[],
  use: (proc: SpawnedProcess, conn: Duplex, stderr: () => string) => Promise<void>,
): Promise<void> {
  const sock = await stdioSocket(`${role}.sock`);
  try {
    const stdio =
      role === 'send'
        ? { stdin: 'ignore' as const, stdout: sock.target }
        : { stdin: sock.target, stdout: 'ignore' as const };
    const proc = await spawnProcess('btrfs', args, { ...stdio, stderr: 'pipe' });
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr = tail(stderr + d.toString())));
    const conn = await sock.accept(proc.exited);
    if (!conn) {
      const exit = await proc.exited;
      throw new BtrfsStreamFailed(role, exit.exitCode ?? undefined, stderr);
    }
    await use(proc, conn, () => stderr);
  } finally {
    await sock.close();
  }
}

async function sendFrom(
  channel: FsChannel,
  proc: SpawnedProcess,
  data: Readable,
  o: StreamOptions,
  stderr: () => string,
): Promise<void> {
  const out = channel.outbound();
  let failure: Error | undefined;
  let stop = () => {};
  // every byte handed to `out` (or the send failed: then nothing waits for the rest)
  const drained = new Promise<void>((resolve) => (stop = resolve));
  const fail = (e: Error) => {
    failure ??= e;
    proc.kill('SIGKILL');
    data.destroy();
    stop();
  };
  const abort = () => fail(o.signal.reason instanceof Error ? o.signal.reason : new Error('aborted'));
  o.signal.addEventListener('abort', abort, { once: true });
  out.on('error', (e) => fail(broke(e)));
  const count = counter(o.onBytes);
  count.once('end', () => stop());
  data.pipe(count).pipe(out, { end: false });
  try {
    const exit = await proc.exited;
    if (exit.exitCode !== 0 && !failure) fail(new BtrfsStreamFailed('send', exit.exitCode ?? undefined, stderr()));
    await drained;
    if (failure) throw failure;
    await new Promise<void>((resolve, reject) => {
      out.once('error', (e) => reject(broke(e)));
      out.end(() => resolve());
    });
  } catch (e) {
    out.destroy();
    throw e;
  } finally {
    o.signal.removeEventListener('abort', abort);
  }
}

/**
 * Receive one stream into `dir` (made here, on the pool: the subvolume is created in it under the
 * sender's name); resolves with the received subvolume's path once `btrfs receive` finished and the
 * sender's barrier came. The subvolume is read-only, with the sender's uuid as its received uuid.
 */
export async function receiveSubvolume(channel: FsChannel, dir: string, o: StreamOptions): Promise<string> {
  o.signal.throwIfAborted();
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const before = new Set(await readdir(dir));
  await withEarlyWriteback(dir, o, (onBytes) =>
    withSocketStream('receive', btrfsArgs.receive(dir), (proc, stdin, stderr) =>
      receiveInto(channel, proc, stdin, { ...o, onBytes }, stderr),
    ),
  );
  const made = (await readdir(dir)).filter((n) => !before.has(n));
  if (made.length !== 1) throw new Error(`btrfs receive into ${dir} made ${made.length} subvolumes, not one`);
  return path.join(dir, made[0]!);
}

/** The peer's stream into `btrfs receive`'s stdin, up to the sender's barrier. */
async function receiveInto(
  channel: FsChannel,
  proc: SpawnedProcess,
  stdin: Writable,
  o: StreamOptions,
  stderr: () => string,
): Promise<void> {
  // taken only now, with its listeners at once: an error must never find the stream unheard
  const input: Readable = channel.inbound();
  let failure: Error | undefined;
  const fail = (e: Error) => {
    failure ??= e;
    proc.kill('SIGKILL');
  };
  const abort = () => fail(o.signal.reason instanceof Error ? o.signal.reason : new Error('aborted'));
  o.signal.addEventListener('abort', abort, { once: true });
  const ended = new Promise<void>((resolve) => {
    input.once('end', resolve);
    input.once('error', (e) => {
      fail(broke(e));
      resolve();
    });
  });
  // -e: receive exits at the stream's end marker, maybe before the barrier: the rest is drained
  input.pipe(counter(o.onBytes)).pipe(stdin);
  try {
    const exit = await proc.exited;
    if (exit.exitCode !== 0 || failure) {
      input.destroy();
      throw failure ?? new BtrfsStreamFailed('receive', exit.exitCode ?? undefined, stderr());
    }
    input.unpipe();
    input.resume();
    await ended;
    if (failure) throw failure;
  } finally {
    o.signal.removeEventListener('abort', abort);
  }
}

import { readdir, rm } from 'node:fs/promises';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Transform, type Duplex, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { runCommand, spawnProcess } from '../exec.ts';
import {
  rsyncHasXxh128,
  rsyncReceiveArgs,
  rsyncSendArgs,
  rsyncSkipsSelinuxXattrs,
  socketRsh,
  type RsyncFeature,
  type RsyncReceiveOptions,
} from './rsync-args.ts';
import { DIR_PREFIX, stdioSocket } from './stdio-socket.ts';
import type { FsChannel } from './ws-frames.ts';

/**
 * One rsync session of a migration over the fs channel, in LXD's fixed roles: the side with the data
 * runs the rsync client, whose `-e` command (socat) reaches a unix socket that this process joins to
 * the channel's session; the receiving side runs `rsync --server` with its stdio on the session. A
 * session ends with a barrier each way (ws-frames.ts).
 */

export interface TransferOptions {
  features: readonly RsyncFeature[];
  signal: AbortSignal;
  /** Bytes that crossed the channel so far in this session (for fs_progress). */
  onBytes?: (total: number) => void;
  /** rsync's --bwlimit (the pool's rsync.bwlimit). */
  bwlimit?: string;
  /** The receiver only: where unchanged files come from (rsyncReceiveArgs). */
  basis?: RsyncReceiveOptions['basis'];
}

let version: Promise<string> | undefined;
/** `rsync --version` here, asked once ('' when it cannot be run). */
const rsyncVersion = () => (version ??= runCommand('rsync', ['--version']).catch(() => ''));
/** Whether rsync here is 3.1.3 or later (LXD then filters security.selinux xattrs). */
const skipSelinux = async () => rsyncSkipsSelinuxXattrs(await rsyncVersion());

/** `features` with svcd's own `xxh128` added when the rsync here has that checksum (see RsyncFeature). */
export async function withLocalRsyncFeatures(features: readonly RsyncFeature[]): Promise<RsyncFeature[]> {
  const has = rsyncHasXxh128(await rsyncVersion());
  return has && !features.includes('xxh128') ? [...features, 'xxh128'] : [...features];
}

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

class RsyncFailed extends Error {
  constructor(role: string, code: number | undefined, stderr: string) {
    super(
      `rsync (${role}) failed${code !== undefined ? ` with exit code ${code}` : ''}: ${stderr.trim() || 'no output'}`,
    );
    this.name = 'RsyncFailed';
  }
}

/** The error `p` rejected with, if it settles within `ms`; undefined when it resolved or is still pending. */
const settledWithin = (p: Promise<void>, ms: number): Promise<Error | undefined> =>
  Promise.race([
    p.then(
      () => undefined,
      (e: Error) => e,
    ),
    new Promise<undefined>((r) => setTimeout(r, ms, undefined)),
  ]);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Remove the socket directories of sessions whose svcd is gone (killed mid-transfer, so it never removed
 * them); those of live processes (other daemons on this machine) are left alone. Returns how many went.
 */
export async function sweepTransferDirs(tmp = os.tmpdir()): Promise<number> {
  let removed = 0;
  for (const name of await readdir(tmp).catch(() => [] as string[])) {
    const m = new RegExp(`^${DIR_PREFIX}(\\d+)-`).exec(name);
    if (!m || alive(Number(m[1]))) continue;
    await rm(path.join(tmp, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

const tail = (s: string) => (s.length > 4096 ? s.slice(-4096) : s);

/** Send the contents of `dir` (a snapshot or volume) as one session. */
export async function sendTree(channel: FsChannel, dir: string, o: TransferOptions): Promise<void> {
  o.signal.throwIfAborted();
  const session = channel.session();
  const sock = await stdioSocket('rsh.sock');
  let bridged: Promise<void> | undefined;
  try {
    const args = rsyncSendArgs({
      sourcePath: dir,
      features: o.features,
      skipSelinuxXattrs: await skipSelinux(),
      rsh: socketRsh(sock.path),
      ...(o.bwlimit ? { bwlimit: o.bwlimit } : {}),
    });
    const child = await spawnProcess('rsync', args, { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
    // socat's connection (rsync's -e command) is joined to the session as soon as it comes
    void sock.accept(child.exited).then((conn) => {
      if (!conn) return;
      bridged = joinSession(session, conn, conn, o.onBytes);
      // awaited below only when rsync succeeded: a failed rsync's broken stream must not go unhandled
      bridged.catch(() => child.kill('SIGKILL'));
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = tail(stderr + d.toString())));
    child.stdout!.resume();
    const abort = () => {
      child.kill('SIGKILL');
      session.destroy(o.signal.reason instanceof Error ? o.signal.reason : new Error('aborted'));
    };
    o.signal.addEventListener('abort', abort, { once: true });
    // the peer hanging up mid-session must not leave rsync waiting for it
    session.once('error', () => child.kill('SIGKILL'));
    try {
      const exit = await child.exited;
      o.signal.throwIfAborted();
      if (exit.exitCode !== 0) {
        // a broken stream is the cause; rsync's own words only when the stream was fine
        const broke = bridged ? await settledWithin(bridged, 200) : undefined;
        session.destroy();
        throw broke ?? new RsyncFailed('sender', exit.exitCode ?? undefined, stderr);
      }
      await bridged;
    } finally {
      o.signal.removeEventListener('abort', abort);
    }
  } finally {
    await sock.close();
  }
}

/**
 * Receive one session into `dir` (which exists). The receiving rsync's stdin and stdout are one connection to
 * a socket svcd listens on (the spawn helper connects it): the stream reaches rsync without a relay through
 * the helper, which had cost two copies and a framed round trip per chunk.
 */
export async function receiveTree(channel: FsChannel, dir: string, o: TransferOptions): Promise<void> {
  o.signal.throwIfAborted();
  const session = channel.session();
  const args = rsyncReceiveArgs({
    targetPath: dir,
    features: o.features,
    skipSelinuxXattrs: await skipSelinux(),
    basis: o.basis,
  });
  const sock = await stdioSocket('rsync.sock');
  try {
    const proc = await spawnProcess('rsync', args, { stdin: sock.target, stdout: sock.target, stderr: 'pipe' });
    const conn = await sock.accept(proc.exited);
    if (!conn) {
      const e = await proc.exited;
      throw new RsyncFailed('receiver', e.exitCode ?? undefined, 'not started');
    }
    await receiveWith(session, proc, conn, o);
  } finally {
    await sock.close();
  }
}

async function receiveWith(
  session: Duplex,
  proc: Awaited<ReturnType<typeof spawnProcess>>,
  sock: net.Socket,
  o: TransferOptions,
): Promise<void> {
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = tail(stderr + d.toString())));
  const abort = () => {
    proc.kill('SIGKILL');
    session.destroy(o.signal.reason instanceof Error ? o.signal.reason : new Error('aborted'));
  };
  o.signal.addEventListener('abort', abort, { once: true });
  // Whether the peer's stream broke (rather than rsync's socket, reset by rsync dying with data unread).
  // (A reset of rsync's socket also destroys the session, through the pipeline: that is not the peer's.)
  let localBroke = false;
  let peerBroke = false;
  sock.once('error', () => (localBroke = true));
  session.once('error', () => (peerBroke = !localBroke));
  const joined = joinSession(session, sock, sock, o.onBytes);
  // the peer hanging up mid-session must not leave rsync waiting for it
  joined.catch(() => proc.kill('SIGKILL'));
  try {
    const exit = await proc.exited;
    o.signal.throwIfAborted();
    if (exit.exitCode !== 0) {
      // a broken stream is the cause when the peer's broke; else rsync's own words (a full disk, say).
      // The peer's barrier is not waited for: its rsync may wait for ours forever.
      const broke = await settledWithin(joined, 200);
      session.destroy();
      throw (peerBroke ? broke : undefined) ?? new RsyncFailed('receiver', exit.exitCode ?? undefined, stderr);
    }
    await joined;
  } finally {
    o.signal.removeEventListener('abort', abort);
  }
}

/**
 * A session joined to a process's (or socket's) two directions: what `from` says goes out, and its end
 * sends our barrier; what the peer sends goes to `to` until the peer's barrier, which is always waited
 * for (the next session must not start before it), even when `to` has already closed.
 */
function joinSession(
  session: Duplex,
  from: NodeJS.ReadableStream & Readable,
  to: NodeJS.WritableStream & Writable,
  onBytes: ((n: number) => void) | undefined,
): Promise<void> {
  const outbound = pipeline(from, session, { end: true }).catch((e: Error) => {
    throw new Error(`the migration stream broke: ${e.message}`);
  });
  const inbound = new Promise<void>((resolve, reject) => {
    const count = counter(onBytes);
    to.on('error', () => {});
    const drain = () => {
      session.unpipe(count);
      session.resume();
    };
    to.once('close', drain);
    session.pipe(count).pipe(to);
    session.once('end', () => {
      to.off('close', drain);
      resolve();
    });
    session.once('error', (e) => reject(new Error(`the migration stream broke: ${e.message}`)));
  });
  return Promise.all([outbound, inbound]).then(() => undefined);
}

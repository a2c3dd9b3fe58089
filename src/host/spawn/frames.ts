/**
 * The spawn helper's wire format (src/host/native/svcd-spawn.c is the other end): the messages of
 * protocol.ts as binary frames over a socket.
 *   frame := u32 length (of what follows) | u8 type | u32 id | body      (little endian)
 *   str   := u32 length | UTF-8 bytes;   strs := u32 count | str...
 * Bodies, parent → helper:
 *   RUN         u32 timeoutMs | u8 flags (1 input, 2 extendEnv, 4 uid, 8 gid) | u32 uid | u32 gid | str file | strs args | strs env ("K=V") | [u32 n | input]
 *   CANCEL, STDIN_END   (none)
 *   SPAWN       u8 flags (1 pty, 2 cwd, 4 copyIn, 8 env) | u16 cols | u16 rows | str file | strs args | strs env | str cwd | str copyIn | 3 × (u8 kind (0 pipe, 1 ignore, 2 append) | str path)
 *   STDIN       u32 seq | bytes          PAUSE, RESUME   u8 fd          KILL   u32 signal number
 *   RESIZE      u16 cols | u16 rows
 * helper → parent:
 *   RESULT      u8 flags (1 spawn failed, 2 timed out, 4 canceled, 8 exited, 16 signaled) | u32 code | u32 signal | u32 errno | u32 stdout length | stdout | stderr
 *   EXIT        the same first 13 bytes
 *   SPAWNED     u32 pid      SPAWN_ERROR   u32 errno      DATA   u8 fd | bytes      EOF   u8 fd      STDIN_ACK   u32 seq
 */
import os from 'node:os';
import type { HelperMessage, HelperResult, ParentMessage, StdioTarget } from './protocol.ts';

const T = { run: 1, cancel: 2, spawn: 3, stdin: 4, 'stdin-end': 5, pause: 6, resume: 7, kill: 8, resize: 9 } as const;
const RESULT = 101;
const SPAWNED = 102;
const SPAWN_ERROR = 103;
const DATA = 104;
const EOF = 105;
const STDIN_ACK = 106;
const EXIT = 107;
const F = { spawnFailed: 1, timedOut: 2, canceled: 4, exited: 8, signaled: 16 };

const signalNumbers = os.constants.signals as Record<string, number>;
const signalNames = new Map(Object.entries(signalNumbers).map(([k, v]) => [v, k]));
const errnoNames = new Map(Object.entries(os.constants.errno as Record<string, number>).map(([k, v]) => [v, k]));
const signalName = (n: number): string => signalNames.get(n) ?? String(n);
const errnoName = (n: number): string => errnoNames.get(n) ?? `errno ${n}`;

/** Growable little-endian writer for one frame. */
class Writer {
  private parts: Buffer[] = [];
  private size = 0;
  private push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }
  u8(v: number): this {
    this.push(Buffer.from([v & 0xff]));
    return this;
  }
  u16(v: number): this {
    const b = Buffer.allocUnsafe(2);
    b.writeUInt16LE(Math.max(0, Math.min(0xffff, Math.trunc(v) || 0)));
    this.push(b);
    return this;
  }
  u32(v: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(Math.max(0, Math.min(0xffffffff, Math.trunc(v) || 0)));
    this.push(b);
    return this;
  }
  bytes(b: Uint8Array): this {
    this.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    return this;
  }
  str(s: string): this {
    const b = Buffer.from(s, 'utf8');
    return this.u32(b.length).bytes(b);
  }
  strs(v: readonly string[]): this {
    this.u32(v.length);
    for (const s of v) this.str(s);
    return this;
  }
  frame(type: number, id: number): Buffer {
    const head = Buffer.allocUnsafe(9);
    head.writeUInt32LE(5 + this.size, 0);
    head.writeUInt8(type, 4);
    head.writeUInt32LE(id >>> 0, 5);
    return Buffer.concat([head, ...this.parts], 9 + this.size);
  }
}

const envList = (env: Record<string, string> | undefined): string[] =>
  Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`);
const stdioKind = (t: StdioTarget): [number, string] =>
  t === 'pipe' ? [0, ''] : t === 'ignore' ? [1, ''] : 'appendTo' in t ? [2, t.appendTo] : [3, t.socket];

/** One message from svcd as the frame the helper reads. */
export function encodeFrame(m: ParentMessage): Buffer {
  const w = new Writer();
  switch (m.type) {
    case 'run': {
      const input =
        m.input === undefined ? undefined : typeof m.input === 'string' ? Buffer.from(m.input, 'utf8') : m.input;
      const flags =
        (input ? 1 : 0) | (m.extendEnv ? 2 : 0) | (m.uid !== undefined ? 4 : 0) | (m.gid !== undefined ? 8 : 0);
      w.u32(m.timeoutMs)
        .u8(flags)
        .u32(m.uid ?? 0)
        .u32(m.gid ?? 0)
        .str(m.file)
        .strs(m.args)
        .strs(envList(m.env));
      if (input) w.u32(input.byteLength).bytes(input);
      break;
    }
    case 'spawn': {
      const flags =
        (m.pty ? 1 : 0) |
        (m.cwd !== undefined ? 2 : 0) |
        (m.copyIn !== undefined ? 4 : 0) |
        (m.env !== undefined ? 8 : 0);
      w.u8(flags)
        .u16(m.pty?.cols ?? 0)
        .u16(m.pty?.rows ?? 0)
        .str(m.file)
        .strs(m.args)
        .strs(envList(m.env))
        .str(m.cwd ?? '')
        .str(m.copyIn ?? '');
      for (const t of m.stdio ?? ['ignore', 'ignore', 'ignore']) {
        const [kind, p] = stdioKind(t);
        w.u8(kind).str(p);
      }
      break;
    }
    case 'stdin':
      w.u32(m.seq).bytes(m.data);
      break;
    case 'pause':
    case 'resume':
      w.u8(m.fd);
      break;
    case 'kill':
      // A name this system does not know is no signal: 0, which the helper ignores (as it ignores a
      // signal for a process already gone).
      w.u32(signalNumbers[m.signal] ?? 0);
      break;
    case 'resize':
      w.u16(m.cols).u16(m.rows);
      break;
    case 'cancel':
    case 'stdin-end':
      break;
  }
  return w.frame(T[m.type], m.id);
}

/** Output as text without one final newline (LF or CRLF). */
function text(b: Buffer): string {
  const s = b.toString('utf8');
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}

/** What the start of a program named `file` failed with, as node's own spawn says it. */
const spawnErrorMessage = (file: string, errno: number): string => `spawn ${file} ${errnoName(errno)}`;

interface Status {
  flags: number;
  exitCode: number | undefined;
  signal: string | undefined;
  errno: number;
}
function status(b: Buffer, at: number): Status {
  const flags = b.readUInt8(at);
  return {
    flags,
    exitCode: flags & F.exited ? b.readUInt32LE(at + 1) : undefined,
    signal: flags & F.signaled ? signalName(b.readUInt32LE(at + 5)) : undefined,
    errno: b.readUInt32LE(at + 9),
  };
}

/** How a buffered command ended (`file`: for the message when it could not start). */
function result(body: Buffer, file: string): HelperResult {
  const s = status(body, 0);
  const outLen = body.readUInt32LE(13);
  const spawnFailed = (s.flags & F.spawnFailed) !== 0;
  const timedOut = (s.flags & F.timedOut) !== 0;
  const isCanceled = (s.flags & F.canceled) !== 0;
  const exitCode = spawnFailed ? undefined : s.exitCode;
  return {
    failed: spawnFailed || timedOut || isCanceled || exitCode !== 0,
    stdout: text(body.subarray(17, 17 + outLen)),
    stderr: text(body.subarray(17 + outLen)),
    exitCode,
    timedOut,
    isCanceled,
    shortMessage: spawnFailed
      ? `could not be started: ${spawnErrorMessage(file, s.errno)}`
      : s.signal
        ? `was killed by ${s.signal}`
        : undefined,
  };
}

/**
 * Reads the helper's frames from its socket, as protocol.ts messages. `fileOf(id)` names the program of
 * a command (for the message of one that could not start).
 */
export class FrameReader {
  private pending: Buffer[] = [];
  private size = 0;
  /** Bytes needed before anything can be decoded: a frame's head, or the whole of the frame begun. */
  private need = 9;
  constructor(
    private readonly onMessage: (m: HelperMessage) => void,
    private readonly fileOf: (id: number) => string,
  ) {}

  push(chunk: Buffer): void {
    this.pending.push(chunk);
    this.size += chunk.length;
    // A large frame arrives in many chunks: they are joined once, when it is whole.
    if (this.size < this.need) return;
    const buf = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.size);
    let at = 0;
    this.need = 9;
    while (buf.length - at >= 9) {
      const len = buf.readUInt32LE(at);
      if (buf.length - at < 4 + len) {
        this.need = 4 + len;
        break;
      }
      const type = buf.readUInt8(at + 4);
      const id = buf.readUInt32LE(at + 5);
      const body = buf.subarray(at + 9, at + 4 + len);
      at += 4 + len;
      const m = this.decode(type, id, body);
      if (m) this.onMessage(m);
    }
    const rest = buf.subarray(at);
    this.pending = rest.length ? [rest] : [];
    this.size = rest.length;
  }

  private decode(type: number, id: number, body: Buffer): HelperMessage | undefined {
    switch (type) {
      case RESULT:
        return { type: 'result', id, ...result(body, this.fileOf(id)) };
      case SPAWNED:
        return { type: 'spawned', id, pid: body.readUInt32LE(0) };
      case SPAWN_ERROR:
        return { type: 'spawn-error', id, message: spawnErrorMessage(this.fileOf(id), body.readUInt32LE(0)) };
      case DATA:
        // a copy: a view would keep the whole chunk it came in alive
        return { type: 'data', id, fd: body.readUInt8(0), data: Buffer.from(body.subarray(1)) };
      case EOF:
        return { type: 'eof', id, fd: body.readUInt8(0) };
      case STDIN_ACK:
        return { type: 'stdin-ack', id, seq: body.readUInt32LE(0) };
      case EXIT: {
        const s = status(body, 0);
        return { type: 'exit', id, exitCode: s.exitCode ?? null, signal: s.signal ?? null };
      }
    }
    return undefined;
  }
}

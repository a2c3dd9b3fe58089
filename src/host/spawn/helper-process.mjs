// @ts-check
// The spawn helper: a small Node process that runs host commands for svcd and sends back their results.
//
// Why: starting a process forks the caller first, and forking svcd (hundreds of MiB of PGlite memory
// to copy page tables for) costs ~40 ms of its main thread per command; forking this helper costs ~2 ms.
// Plain JavaScript so it starts without the TypeScript loader; its messages are those of protocol.ts
// (checked by tsc through the JSDoc types below): buffered commands (`run`, `cancel` → `result`), and
// streamed processes (exec, console), pipes or a PTY, their bytes relayed as messages with flow control.
// A spawn with `copyIn: <dir>` runs `file` from a private copy (private-copy.mjs).
// The helper exits when svcd goes away (the IPC channel closes), ending what it started.
/** @import { HelperMessage, HelperResult, ParentMessage, RunMessage, SpawnMessage, StreamControlMessage } from './protocol.ts' */
/** @import { ChildProcess } from 'node:child_process' */
/** @import { IPty } from 'node-pty' */
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { createIdleGc } from '../../idle-gc.mjs';
import { privateCopy } from './private-copy.mjs';

/** Buffered commands running, by id. @type {Map<number, AbortController>} */
const running = new Map();
/** @typedef {{ kind: 'pipes'; child: ChildProcess } | { kind: 'pty'; term: IPty }} Streamed */
/** Streamed processes by id. @type {Map<number, Streamed>} */
const streamed = new Map();
/** @type {typeof import('node-pty') | undefined} */
let ptyModule;

/**
 * A burst of commands (hundreds of container starts) grows the helper's heap too: compacted once quiet.
 * The observers' periodic commands (a few per 5 s) still count as quiet; a collection needs a burst.
 */
const idleGc = createIdleGc(5_000, { quietBelow: 10, minActivity: 100 });

process.on('message', async (/** @type {ParentMessage} */ msg) => {
  idleGc.activity();
  if (msg?.type === 'cancel') return running.get(msg.id)?.abort();
  if (msg?.type === 'spawn') return startStreamed(msg);
  const p = streamed.get(msg?.id);
  if (p) return controlStreamed(p, /** @type {StreamControlMessage} */ (msg));
  if (msg?.type !== 'run') return;
  const abort = new AbortController();
  running.set(msg.id, abort);
  try {
    send({ type: 'result', id: msg.id, ...(await runBuffered(msg, abort.signal)) });
  } finally {
    running.delete(msg.id);
  }
});

/** Grace after SIGTERM (a timeout or a cancel) before SIGKILL. */
const KILL_GRACE_MS = 5_000;
/** How long after a command exits its output pipes may stay open (a daemon it left holding them). */
const PIPE_GRACE_MS = 200;

/**
 * Run a command to its end with its output buffered: node's own spawn, which costs this process
 * about 1 ms of CPU per command against execa's 2.1–3.1 (200 runs of `true`, 8 at a time).
 * stdin is `input` (then closed) or the null device. One final newline is stripped from the output.
 * @param {RunMessage} msg
 * @param {AbortSignal} signal
 * @returns {Promise<HelperResult>}
 */
function runBuffered(msg, signal) {
  return new Promise((resolve) => {
    /** @type {Buffer[]} */
    const out = [];
    /** @type {Buffer[]} */
    const err = [];
    let timedOut = false;
    let isCanceled = false;
    /** @type {Error | undefined} */
    let spawnError;
    /** @type {ChildProcess | undefined} */
    let child;
    /** @type {NodeJS.Timeout | undefined} */
    let killTimer;
    /** @type {NodeJS.Timeout | undefined} */
    let pipeTimer;
    let done = false;
    /** @param {number | null | undefined} code @param {NodeJS.Signals | null | undefined} sig */
    const finish = (code, sig) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      clearTimeout(pipeTimer);
      signal.removeEventListener('abort', onAbort);
      const exitCode = typeof code === 'number' ? code : undefined;
      const failed = !!spawnError || timedOut || isCanceled || exitCode !== 0;
      const shortMessage = spawnError ? `could not be started: ${spawnError.message}` : sig ? `was killed by ${sig}` : undefined;
      resolve({ failed, stdout: text(out), stderr: text(err), exitCode: spawnError ? undefined : exitCode, timedOut, isCanceled, shortMessage });
    };
    const kill = () => {
      try {
        child?.kill('SIGTERM');
      } catch {}
      killTimer ??= setTimeout(() => {
        try {
          child?.kill('SIGKILL');
        } catch {}
      }, KILL_GRACE_MS);
    };
    const onAbort = () => {
      isCanceled = true;
      kill();
    };
    const timer = msg.timeoutMs > 0 ? setTimeout(() => ((timedOut = true), kill()), msg.timeoutMs) : undefined;
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      child = spawn(msg.file, msg.args, {
        stdio: [msg.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        env: msg.extendEnv === false ? { ...msg.env } : { ...process.env, ...msg.env },
        ...(msg.uid !== undefined ? { uid: msg.uid } : {}),
        ...(msg.gid !== undefined ? { gid: msg.gid } : {}),
      });
    } catch (e) {
      spawnError = e instanceof Error ? e : new Error(String(e));
      return finish(undefined, undefined);
    }
    const { stdout, stderr } = /** @type {{ stdout: import('node:stream').Readable; stderr: import('node:stream').Readable }} */ (child);
    stdout.on('data', (d) => out.push(d));
    stderr.on('data', (d) => err.push(d));
    child.once('error', (e) => {
      spawnError ??= e;
    });
    child.once('close', finish);
    // A command that left a daemon holding its pipes has still ended.
    child.once('exit', (code, sig) => {
      pipeTimer = setTimeout(() => {
        stdout.destroy();
        stderr.destroy();
        finish(code, sig);
      }, PIPE_GRACE_MS);
    });
    if (child.stdin && msg.input !== undefined) {
      child.stdin.on('error', () => {});
      child.stdin.end(typeof msg.input === 'string' ? msg.input : Buffer.from(msg.input.buffer, msg.input.byteOffset, msg.input.byteLength));
    }
    if (signal.aborted) onAbort();
  });
}

/** Output as text without one final newline (LF or CRLF). @param {Buffer[]} chunks */
function text(chunks) {
  const s = Buffer.concat(chunks).toString('utf8');
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}

/** The program to run for a spawn: `file`, or its private copy. @param {SpawnMessage} msg */
function programFor(msg) {
  if (!msg.copyIn) return msg.file;
  try {
    return privateCopy(msg.file, msg.copyIn) ?? msg.file;
  } catch {
    return msg.file;
  }
}

/** @param {SpawnMessage} msg */
async function startStreamed(msg) {
  const { id } = msg;
  const program = programFor(msg);
  try {
    if (msg.pty) {
      ptyModule ??= (await import('node-pty')).default;
      const term = ptyModule.spawn(program, msg.args, { cols: msg.pty.cols, rows: msg.pty.rows, cwd: msg.cwd ?? '/', env: msg.env, encoding: null, name: 'xterm' });
      streamed.set(id, { kind: 'pty', term });
      send({ type: 'spawned', id, pid: term.pid });
      term.onData((d) => send({ type: 'data', id, fd: 1, data: typeof d === 'string' ? Buffer.from(d, 'utf8') : d }));
      term.onExit(({ exitCode, signal }) => {
        streamed.delete(id);
        send({ type: 'eof', id, fd: 1 });
        send({ type: 'exit', id, exitCode, signal: signal || null });
      });
      return;
    }
    /** @type {number[]} */
    const opened = [];
    const stdio = (msg.stdio ?? []).map((t) => {
      if (t === 'pipe' || t === 'ignore') return t;
      // an existing file (svcd created it), never through a symlink
      const fd = openSync(t.appendTo, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
      opened.push(fd);
      return fd;
    });
    const child = spawn(program, msg.args, { stdio, cwd: msg.cwd, env: msg.env, argv0: msg.file });
    for (const fd of opened) closeSync(fd);
    child.once('error', (e) => {
      streamed.delete(id);
      send({ type: 'spawn-error', id, message: e.message });
    });
    child.once('spawn', () => {
      streamed.set(id, { kind: 'pipes', child });
      // Once spawned, a child has its pid.
      send({ type: 'spawned', id, pid: /** @type {number} */ (child.pid) });
    });
    for (const [fd, stream] of /** @type {const} */ ([[1, child.stdout], [2, child.stderr]])) {
      if (!stream) continue;
      stream.on('data', (data) => send({ type: 'data', id, fd, data }));
      stream.on('end', () => send({ type: 'eof', id, fd }));
    }
    child.stdin?.on('error', () => {});
    child.once('exit', (exitCode, signal) => {
      streamed.delete(id);
      send({ type: 'exit', id, exitCode, signal });
    });
  } catch (e) {
    streamed.delete(id);
    send({ type: 'spawn-error', id, message: e instanceof Error ? e.message : String(e) });
  }
}

/** @param {Streamed} p @param {StreamControlMessage} msg */
function controlStreamed(p, msg) {
  const { id } = msg;
  const term = p.kind === 'pty' ? p.term : undefined;
  // Undefined exactly when `term` is set: each use below comes after `term` was tried.
  const child = /** @type {ChildProcess} */ (p.kind === 'pipes' ? p.child : undefined);
  try {
    switch (msg.type) {
      case 'stdin':
        if (term) {
          // node-pty writes any bytes; its type says Buffer.
          term.write(/** @type {Buffer} */ (msg.data));
          return send({ type: 'stdin-ack', id, seq: msg.seq });
        }
        if (!child.stdin || child.stdin.destroyed) return send({ type: 'stdin-ack', id, seq: msg.seq });
        return child.stdin.write(msg.data, () => send({ type: 'stdin-ack', id, seq: msg.seq }));
      case 'stdin-end':
        return child?.stdin?.end();
      case 'pause':
        return term ? term.pause() : (msg.fd === 2 ? child.stderr : child.stdout)?.pause();
      case 'resume':
        return term ? term.resume() : (msg.fd === 2 ? child.stderr : child.stdout)?.resume();
      case 'resize':
        return term?.resize(msg.cols, msg.rows);
      case 'kill':
        return term ? term.kill(msg.signal) : child.kill(msg.signal);
    }
  } catch {
    // the process is already gone: its exit message is on its way
  }
}

/** @param {HelperMessage} m */
function send(m) {
  if (process.connected) process.send?.(m);
}

// svcd went away or stopped the helper: end the commands in flight with it.
const quit = () => {
  for (const a of running.values()) a.abort();
  for (const p of streamed.values()) {
    try {
      p.kind === 'pty' ? p.term.kill('SIGHUP') : p.child.kill('SIGTERM');
    } catch {}
  }
  setTimeout(() => process.exit(0), 100).unref();
  if (running.size === 0 && streamed.size === 0) process.exit(0);
};
process.on('disconnect', quit);
process.on('SIGTERM', quit);

// The spawn helper: a small Node process that runs host commands for svcd and sends back their results.
//
// Why: starting a process forks the caller first, and forking svcd (hundreds of MiB of PGlite memory
// to copy page tables for) costs ~40 ms of its main thread per command; forking this helper costs ~2 ms.
// Plain JavaScript so it starts without the TypeScript loader. Protocol (advanced IPC serialization):
//   parent → helper  {type:'run', id, file, args, timeoutMs, input?, env?, extendEnv, uid?, gid?}  |  {type:'cancel', id}
//   helper → parent  {type:'result', id, failed, stdout, stderr, exitCode?, timedOut, isCanceled, shortMessage?}
// Streamed processes (exec, console), pipes or a PTY, their bytes relayed as messages with flow control:
//   parent → helper  {type:'spawn', id, file, args, cwd, env, stdio:[t,t,t] | pty:{cols,rows}}  where t is
//                    'pipe' | 'ignore' | {appendTo: path};  {type:'stdin', id, seq, data}  {type:'stdin-end', id}
//                    {type:'pause'|'resume', id, fd}  {type:'kill', id, signal}  {type:'resize', id, cols, rows}
//   helper → parent  {type:'spawned', id, pid} | {type:'spawn-error', id, message}  {type:'data', id, fd, data}
//                    {type:'eof', id, fd}  {type:'stdin-ack', id, seq}  {type:'exit', id, exitCode, signal}
//   A spawn with `copyIn: <dir>` runs `file` from a private copy (privateCopy below).
// The helper exits when svcd goes away (the IPC channel closes), ending what it started.
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, constants, copyFileSync, fstatSync, openSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';

const running = new Map();
/** Streamed processes by id: { kind: 'pipes', child } | { kind: 'pty', term }. */
const streamed = new Map();
let ptyModule;

process.on('message', async (msg) => {
  if (msg?.type === 'cancel') return running.get(msg.id)?.abort();
  if (msg?.type === 'spawn') return startStreamed(msg);
  if (streamed.has(msg?.id)) return controlStreamed(streamed.get(msg.id), msg);
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
 */
function runBuffered(msg, signal) {
  return new Promise((resolve) => {
    const out = [];
    const err = [];
    let timedOut = false;
    let isCanceled = false;
    let spawnError;
    let child;
    let killTimer;
    let pipeTimer;
    let done = false;
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
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.once('error', (e) => {
      spawnError ??= e;
    });
    child.once('close', finish);
    // A command that left a daemon holding its pipes has still ended.
    child.once('exit', (code, sig) => {
      pipeTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, sig);
      }, PIPE_GRACE_MS);
    });
    if (child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(typeof msg.input === 'string' ? msg.input : Buffer.from(msg.input.buffer, msg.input.byteOffset, msg.input.byteLength));
    }
    if (signal.aborted) onAbort();
  });
}

/** Output as text without one final newline (LF or CRLF). */
function text(chunks) {
  const s = Buffer.concat(chunks).toString('utf8');
  return s.endsWith('\r\n') ? s.slice(0, -2) : s.endsWith('\n') ? s.slice(0, -1) : s;
}

/**
 * `file` (a program name on PATH) run from an unlinked, read-only, root-only copy that this helper
 * keeps open, exec'd as /proc/<helper>/fd/<n>: `lxc-attach` copies itself into a sealed memfd and
 * executes that again on every start (about 2 ms here), unless it already runs from a memfd or from
 * an unlinked file, which is what the copy is. The self-copy guards the host binary against a
 * container root that is host root (CVE-2019-5736); svcd asks for the copy only for containers whose
 * user namespace does not map host root, whose root cannot write a host-root-owned file anyway.
 * Made again when the program on disk changes (an upgrade); undefined when it cannot be made (the
 * caller then runs `file` itself).
 */
const copies = new Map();
/** The file at `p` with its stat, or undefined. */
const fileAt = (p) => {
  try {
    const st = statSync(p);
    return st.isFile() ? { path: p, st } : undefined;
  } catch {
    return undefined;
  }
};
function privateCopy(file, dir) {
  const known = copies.get(file);
  const candidates = file.includes('/') ? [file] : (process.env.PATH ?? '/usr/bin:/bin').split(':').map((d) => path.join(d, file));
  const source = (known && fileAt(known.source)) ?? candidates.map(fileAt).find(Boolean);
  if (!source) return undefined;
  const { st } = source;
  const stamp = `${source.path}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  if (known?.stamp === stamp) return known.path;
  if (known) closeSync(known.fd);
  copies.delete(file);
  const tmp = path.join(dir, `.${path.basename(file)}-${process.pid}-${Date.now()}`);
  // EXCL: never onto anything already there (a symlink included).
  copyFileSync(source.path, tmp, constants.COPYFILE_EXCL);
  let fd;
  try {
    chmodSync(tmp, 0o500);
    fd = openSync(tmp, constants.O_RDONLY | constants.O_NOFOLLOW);
  } finally {
    unlinkSync(tmp);
  }
  if (fstatSync(fd).nlink !== 0) {
    closeSync(fd);
    return undefined;
  }
  const entry = { fd, source: source.path, stamp, path: `/proc/${process.pid}/fd/${fd}` };
  copies.set(file, entry);
  return entry.path;
}

function programFor(msg) {
  if (!msg.copyIn) return msg.file;
  try {
    return privateCopy(msg.file, msg.copyIn) ?? msg.file;
  } catch {
    return msg.file;
  }
}

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
    const opened = [];
    const stdio = msg.stdio.map((t) => {
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
      send({ type: 'spawned', id, pid: child.pid });
    });
    for (const [fd, stream] of [[1, child.stdout], [2, child.stderr]]) {
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

function controlStreamed(p, msg) {
  const { id } = msg;
  const term = p.kind === 'pty' ? p.term : undefined;
  const child = p.kind === 'pipes' ? p.child : undefined;
  try {
    switch (msg.type) {
      case 'stdin':
        if (term) {
          term.write(msg.data);
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

function send(m) {
  if (process.connected) process.send(m);
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

import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { InteractiveCommand } from '../host/exec.ts';
import { createConsoleSession } from './console-session.ts';

/** A stand-in for a `ws` socket: records what is sent and closed. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  sent: { data: Buffer; binary: boolean }[] = [];
  closedWith: number | undefined;
  send(data: Buffer, opts: { binary: boolean }) {
    this.sent.push({ data, binary: opts.binary });
  }
  close(code: number) {
    this.closedWith = code;
    this.readyState = 3;
    this.emit('close');
  }
}

function fakeCommand() {
  const ev = new EventEmitter();
  const written: Buffer[] = [];
  let killed = false;
  const cmd: InteractiveCommand = {
    onData: (l) => void ev.on('data', l),
    onExit: (l) => void ev.once('exit', l),
    write: (d) => void written.push(d),
    // like a real process: a kill ends it a moment later (once)
    kill: () => {
      if (killed) return;
      killed = true;
      setImmediate(() => ev.emit('exit', { exitCode: undefined, stderr: '' }));
    },
  };
  return {
    cmd,
    written,
    killed: () => killed,
    output: (s: string) => ev.emit('data', Buffer.from(s)),
    exit: (exitCode: number, stderr = '') => ev.emit('exit', { exitCode, stderr }),
  };
}

test('bytes flow both ways; an empty text frame is not input; closing the control socket detaches', async () => {
  const f = fakeCommand();
  const s = createConsoleSession({ open: () => f.cmd, signal: new AbortController().signal });
  const data = new FakeSocket();
  const control = new FakeSocket();
  s.onSocket('control', control);
  s.onSocket('0', data);
  data.emit('message', Buffer.from('ls\r'), true);
  data.emit('message', Buffer.from('typed as text'), false);
  data.emit('message', Buffer.alloc(0), false);
  control.emit(
    'message',
    Buffer.from(JSON.stringify({ command: 'window-resize', args: { width: '80', height: '24' } })),
    false,
  );
  f.output('out');
  assert.deepEqual(f.written.map(String), ['ls\r', 'typed as text']);
  assert.deepEqual(
    data.sent.map((m) => [String(m.data), m.binary]),
    [['out', true]],
  );
  control.close(1000);
  await s.done;
  assert.ok(f.killed());
  assert.equal(data.closedWith, 1000);
});

test('the command failing at once fails the session with its reason; a clean exit (container stopped) ends it', async () => {
  const busy = fakeCommand();
  const s1 = createConsoleSession({ open: () => busy.cmd, signal: new AbortController().signal });
  const d1 = new FakeSocket();
  s1.onSocket('0', d1);
  busy.exit(1, 'lxc-console: x: commands.c: lxc_cmd_get_tty_fd: 1200 Bad file descriptor - Denied access to tty');
  await assert.rejects(s1.done, /another client is attached/);
  assert.equal(d1.closedWith, 1000);
  const gone = fakeCommand();
  const s2 = createConsoleSession({ open: () => gone.cmd, signal: new AbortController().signal });
  s2.onSocket('0', new FakeSocket());
  gone.exit(0);
  await s2.done;
});

test('no client within the connect timeout fails; an abort ends an attached session; late sockets are closed', async () => {
  const s1 = createConsoleSession({
    open: () => fakeCommand().cmd,
    signal: new AbortController().signal,
    connectTimeoutMs: 20,
  });
  await assert.rejects(s1.done, /Timed out waiting for the console websocket/);
  const late = new FakeSocket();
  s1.onSocket('0', late);
  assert.equal(late.closedWith, 1000);
  const ac = new AbortController();
  const f = fakeCommand();
  const s2 = createConsoleSession({ open: () => f.cmd, signal: ac.signal });
  s2.onSocket('0', new FakeSocket());
  ac.abort();
  await s2.done;
  assert.ok(f.killed());
});

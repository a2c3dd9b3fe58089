/**
 * The container console on real LXC (busybox image: init runs `askfirst` with a shell on
 * /dev/console): the console log (GET/DELETE, kept after a stop, fresh at each start), attaching
 * over raw websockets (binary frames both ways, window-resize on control, detach by closing), a
 * stopped container refused, and Debian's `lxc console` under tmux. `after` stops and deletes the
 * containers, ends the tmux server of this test, stops the daemon and removes the temp dirs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { lxcIdOf, teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container console e2e tests: ${skip}`);

/** A websocket on the daemon's unix socket; resolves once open. */
function connect(socketPath: string, urlPath: string): Promise<WebSocket> {
  const ws = new WebSocket(`ws+unix://${socketPath}:${urlPath}`);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

describe('container console on real LXC', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let imgDir = '';
  const tmuxSocket = `svcd-console-test-${process.pid}`;
  const tmux = (...args: string[]) => run('tmux', ['-L', tmuxSocket, ...args]);
  const consoleLog = async (name: string) => {
    const r = await api.get(`/1.0/containers/${name}/console`);
    assert.equal(r.status, 200, r.text);
    return r.text;
  };

  /** Attach over raw websockets; `output()` is everything received so far. */
  async function attach(name: string, size = { width: 100, height: 30 }) {
    const res = await api.post(`/1.0/containers/${name}/console`, size);
    assert.equal(res.status, 202, res.text);
    const op = res.json.metadata;
    assert.equal(op.class, 'websocket');
    assert.deepEqual(Object.keys(op.metadata.fds).sort(), ['0', 'control']);
    const wsPath = (fd: string) => `${res.json.operation}/websocket?secret=${op.metadata.fds[fd]}`;
    const control = await connect(d.socketPath, wsPath('control'));
    const data = await connect(d.socketPath, wsPath('0'));
    const chunks: Buffer[] = [];
    let textFrames = 0;
    data.on('message', (m: Buffer, isBinary: boolean) => {
      if (!isBinary) textFrames++;
      chunks.push(Buffer.from(m));
    });
    const output = () => Buffer.concat(chunks).toString('utf8');
    const type = (s: string) => data.send(Buffer.from(s), { binary: true });
    return { op: res.json.operation as string, data, control, output, type, textFrames: () => textFrames };
  }

  /** The LXC name (svcd's id) of `name`, from the rendered config's `lxc.uts.name`. */
  const idOf = (name: string) => lxcIdOf(d.stateDir, name);

  before(async () => {
    await ensureRootSubids();
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-console-img-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    await uploadBusybox(api, imgDir);
    await waitOp(api, await api.post('/1.0/containers', { name: 'con1', source: { type: 'image', alias: 'bb' } }));
  });

  after(async () => {
    await tmux('kill-server').catch(() => {});
    await lxc?.cleanup();
    await teardownContainers(d, api, [imgDir]);
  });

  test('a container never started has an empty console log; a stopped one cannot be attached (400)', async () => {
    assert.equal(await consoleLog('con1'), '');
    const msg = expectError(await api.post('/1.0/containers/con1/console', { width: 80, height: 24 }), 400);
    assert.match(msg, /not running/);
    expectError(await api.get('/1.0/containers/nope/console'), 404);
    expectError(await api.post('/1.0/containers/nope/console', {}), 404);
    expectError(await api.delete('/1.0/containers/nope/console'), 404);
  });

  test('the console log shows what init writes on the console', async () => {
    await waitOp(api, await api.put('/1.0/containers/con1/state', { action: 'start' }));
    await eventually(
      async () => (await consoleLog('con1')).includes('Please press Enter to activate this console.'),
      'the askfirst prompt in the console log',
      30_000,
    );
    const r = await api.get('/1.0/containers/con1/console');
    assert.equal(r.headers['content-type'], 'application/octet-stream');
  });

  test('bad console requests are 400', async () => {
    expectError(await api.post('/1.0/containers/con1/console', { width: 'wide' }), 400);
    expectError(await api.post('/1.0/containers/con1/console', { height: -1 }), 400);
    expectError(await api.post('/1.0/containers/con1/console', { width: 1.5 }), 400);
    expectError(
      await api.post('/1.0/containers/con1/console', '{not json', { 'Content-Type': 'application/json' }),
      400,
    );
  });

  test('attach over websockets: a shell on the console runs what is typed; Ctrl+a q is passed through; control messages; detach by closing', async () => {
    const s = await attach('con1');
    // askfirst: Enter activates the console's shell.
    s.type('\r');
    await eventually(() => s.output().includes('# '), 'a shell prompt', 15_000);
    s.type('echo con-$((6*7))\r');
    await eventually(() => s.output().includes('con-42'), 'the output of echo (computed by the shell)', 10_000);
    // The escape sequence of lxc-console is off: Ctrl+a q reaches the shell, the session stays.
    s.type('\x01q\x15'); // Ctrl+a, q, then Ctrl+u erases the line
    s.control.send(JSON.stringify({ command: 'window-resize', args: { width: '120', height: '40' } }));
    s.control.send(JSON.stringify({ command: 'window-resize', args: { width: 'x', height: null } }));
    s.control.send('not json');
    s.type('echo still-$((2+3))\r');
    await eventually(
      () => s.output().includes('still-5'),
      'the console still attached after Ctrl+a q and a resize',
      10_000,
    );
    assert.equal(s.textFrames(), 0, 'terminal output comes in binary frames');
    // The log mirrors the console.
    assert.ok((await consoleLog('con1')).includes('con-42'));
    const closed = new Promise((r) => s.control.once('close', r));
    s.data.close();
    await closed;
    const done = await api.get(`${s.op}/wait?timeout=30`);
    assert.equal(done.json.metadata.status, 'Success', done.json.metadata.err);
    // A second attachment works once the first is gone (LXC allows one at a time).
    const s2 = await attach('con1');
    s2.type('echo again-$((5*5))\r');
    await eventually(() => s2.output().includes('again-25'), 'a second attachment', 15_000);
    s2.control.close();
    assert.equal((await api.get(`${s2.op}/wait?timeout=30`)).json.metadata.status, 'Success');
    // Console sessions leave no lines of lxc-console's in the container's lxc.log.
    const lxcLog = await api.get('/1.0/containers/con1/logs/lxc.log');
    assert.equal(lxcLog.status, 200);
    assert.deepEqual(
      lxcLog.text.split('\n').filter((l) => l.startsWith('lxc-console ')),
      [],
    );
  });

  test('a second client while one is attached: its operation fails (console busy), the first goes on', async () => {
    const first = await attach('con1');
    first.type('echo first-$((7*7))\r');
    await eventually(() => first.output().includes('first-49'), 'the first attachment', 15_000);
    const second = await attach('con1');
    const ended = await api.get(`${second.op}/wait?timeout=30`);
    assert.equal(ended.json.metadata.status, 'Failure');
    assert.match(ended.json.metadata.err, /another client is attached/);
    await eventually(() => second.data.readyState === WebSocket.CLOSED, 'the second data socket closed');
    first.type('echo still-first-$((8*8))\r');
    await eventually(
      () => first.output().includes('still-first-64'),
      'the first attachment after the refused one',
      15_000,
    );
    first.data.close();
    assert.equal((await api.get(`${first.op}/wait?timeout=30`)).json.metadata.status, 'Success');
  });

  test('a websocket secret is valid once', async () => {
    const res = await api.post('/1.0/containers/con1/console', {});
    const { fds } = res.json.metadata.metadata;
    const data = await connect(d.socketPath, `${res.json.operation}/websocket?secret=${fds['0']}`);
    await assert.rejects(connect(d.socketPath, `${res.json.operation}/websocket?secret=${fds['0']}`), /HTTP 403/);
    data.close();
    assert.equal((await api.get(`${res.json.operation}/wait?timeout=30`)).json.metadata.status, 'Success');
  });

  test("DELETE empties the log; a stopped container keeps its last run's log; a new start begins a new one", async () => {
    assert.ok((await consoleLog('con1')).includes('again-25'));
    const del = await api.delete('/1.0/containers/con1/console');
    assert.equal(del.status, 200, del.text);
    assert.equal(del.json.type, 'sync');
    assert.ok(!(await consoleLog('con1')).includes('again-25'));
    // New console output still lands in the log after it was emptied (LXC appends at the new end).
    const s = await attach('con1');
    s.type('echo fresh-$((4*4))\r');
    await eventually(() => s.output().includes('fresh-16'), 'echo output', 15_000);
    s.data.close();
    await api.get(`${s.op}/wait?timeout=30`);
    const log = await consoleLog('con1');
    assert.ok(log.includes('fresh-16'));
    assert.ok(!log.startsWith('\0'), 'no hole left by the truncation');
    // A chatty console: at 128 KiB LXC rotates the log once; GET serves both parts, oldest first.
    const id = await idOf('con1');
    await run('lxc-attach', [
      '-n',
      id,
      '-P',
      path.join(d.stateDir, 'containers'),
      '--',
      '/bin/sh',
      '-c',
      'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -10000 > /dev/console; echo END-OF-FLOOD > /dev/console',
    ]);
    const flooded = await eventually(async () => {
      const l = await consoleLog('con1');
      return l.includes('END-OF-FLOOD') ? l : undefined;
    }, 'the flood in the console log');
    assert.ok(flooded.length > 128 * 1024 && flooded.length <= 2 * 128 * 1024 + 4096, `${flooded.length} bytes`);
    assert.ok(!flooded.includes('fresh-16'), 'the oldest output was rotated away');
    assert.match(flooded, /^[\s\S]*0123456789abcdefghijklmnopqrstuvwxyz\r?\n[\s\S]*END-OF-FLOOD/);
    await waitOp(api, await api.put('/1.0/containers/con1/state', { action: 'stop', force: true }));
    assert.ok((await consoleLog('con1')).includes('END-OF-FLOOD'), "the last run's log after a stop");
    expectError(await api.post('/1.0/containers/con1/console', {}), 400);
    await waitOp(api, await api.put('/1.0/containers/con1/state', { action: 'start' }));
    await eventually(
      async () => (await consoleLog('con1')).includes('Please press Enter'),
      "the new run's prompt",
      30_000,
    );
    assert.ok(
      !(await consoleLog('con1')).includes('END-OF-FLOOD'),
      'the previous run (both parts) is gone from the log',
    );
  });

  test('Debian lxc console (under tmux): type, see output, detach with Ctrl+a q; lxc console --show-log', async () => {
    await tmux(
      'new-session',
      '-d',
      '-s',
      'con',
      '-x',
      '100',
      '-y',
      '30',
      '-e',
      `LXD_DIR=${d.stateDir}`,
      '-e',
      `LXD_CONF=${lxc.conf}`,
      '-e',
      `HOME=${lxc.conf}`,
      'lxc console con1; sleep 60',
    );
    const pane = async () => (await tmux('capture-pane', '-p', '-t', 'con')).stdout;
    await eventually(async () => (await pane()).includes('To detach from the console'), 'lxc console attached', 15_000);
    await tmux('send-keys', '-t', 'con', 'Enter');
    await tmux('send-keys', '-t', 'con', 'echo tmux-$((3*3))', 'Enter');
    await eventually(async () => (await pane()).includes('tmux-9'), 'the echo output in the lxc console pane', 15_000);
    // Detach: lxc console ends (the pane goes on with `sleep`), the operation ends with Success.
    await tmux('send-keys', '-t', 'con', 'C-a', 'q');
    await eventually(
      async () => {
        const ops = (await api.get('/1.0/operations?recursion=1')).json.metadata;
        const running = [...(ops.running ?? [])].filter((o: any) => o.description === 'Showing console');
        return running.length === 0;
      },
      'the console operation to end after detaching',
      15_000,
    );
    await tmux('kill-session', '-t', 'con');
    const shown = await lxc.ok(['console', 'con1', '--show-log']);
    assert.match(shown, /tmux-9/);
  });

  test('a container stopping under an attached client ends the session: sockets closed, operation Success', async () => {
    const s = await attach('con1');
    s.type('echo before-stop\r');
    await eventually(() => s.output().includes('before-stop'), 'attached', 15_000);
    const closed = new Promise((r) => s.data.once('close', r));
    await waitOp(api, await api.put('/1.0/containers/con1/state', { action: 'stop', force: true }));
    await closed;
    assert.equal((await api.get(`${s.op}/wait?timeout=30`)).json.metadata.status, 'Success');
  });
});

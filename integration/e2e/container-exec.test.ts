/**
 * `POST /1.0/containers/<name>/exec` on real LXC (busybox image), against svcd as a process: raw
 * websockets (pipes and PTY, control messages, EOF frames, large and binary data), exec without
 * websockets (recorded output through the logs API), refusals, then the real clients: Debian's
 * `lxc exec` (pipes, and a terminal under tmux) and pylxd's `container.execute`.
 * One daemon; an unprivileged container `u1`, a privileged `p1` and a stopped `s1`. `after`
 * force-stops and deletes them, ends this state dir's lxc-monitor(d), removes the temp dirs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, readlink, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { execWithSockets, openOperationSocket } from '../support/exec-ws.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container exec e2e tests: ${skip}`);

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Host pids whose command line is exactly `argv` (to prove a command is, or is no longer, running). */
async function hostPids(argv: string[]): Promise<number[]> {
  const want = `${argv.join('\0')}\0`;
  const out: number[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    if ((await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '')) === want) out.push(Number(e));
  }
  return out;
}

describe('container exec on real LXC: websockets, PTY, recorded output, lxc CLI, pylxd', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let work = '';

  /** Exec with websockets; all fds connected; stdin EOF sent right away unless `stdin` says otherwise. */
  async function wsExec(name: string, command: string[], body: Record<string, unknown> = {}, stdin?: Buffer | null) {
    const s = await execWithSockets(api, d.socketPath, name, { command, ...body });
    if (stdin !== null) {
      if (stdin) s.write(stdin);
      s.eof();
    }
    const op = await s.done();
    assert.equal(op.status, 'Success', op.err);
    await Promise.all(Object.values(s.received).map((r) => r.closed));
    return {
      op,
      status: op.metadata.return as number,
      out: s.received['1']!,
      err: s.received['2']!,
      stdout: s.received['1']!.data.toString(),
      stderr: s.received['2']!.data.toString(),
    };
  }
  /** Exec without websockets (stdio on /dev/null); returns the exit status. */
  async function quietExec(name: string, command: string[]): Promise<number> {
    const op = await waitOp(
      api,
      await api.post(`/1.0/containers/${name}/exec`, { command, 'wait-for-websocket': false }),
    );
    return op.metadata.return;
  }

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-exec-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    await lxc.ok(['list']); // the CLI's first run prints a welcome on stderr
    await uploadBusybox(api, work);
    const containers: [string, Record<string, unknown>, boolean][] = [
      ['u1', { config: { 'environment.FROM_CONFIG': 'cfg' } }, true],
      ['p1', { config: { 'security.privileged': 'true' } }, true],
      ['s1', {}, false],
    ];
    for (const [name, extra, start] of containers) {
      await waitOp(api, await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' }, ...extra }));
      if (start) await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    }
  });

  after(async () => {
    await teardownContainers(d, api, [work]);
    await lxc?.cleanup();
  });

  test('pipes: stdout and stderr apart, binary frames, EOF frames, exit status, sockets ended', async () => {
    const r = await wsExec('u1', ['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(r.status, 3);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.out.eofs, 1, 'stdout ends with one empty text frame');
    assert.equal(r.err.eofs, 1);
    assert.deepEqual([...r.out.texts, ...r.err.texts], [], 'no output as text frames');
    assert.equal(r.op.class, 'websocket');
    assert.deepEqual(Object.keys(r.op.metadata.fds).sort(), ['0', '1', '2', 'control']);
    // The finished operation stays readable with its status.
    const again = await api.get(`/1.0/operations/${r.op.id}`);
    assert.equal(again.json.metadata.metadata.return, 3);
    assert.equal((await wsExec('u1', ['true'])).status, 0);
  });

  test('stdin: data frames reach the command, an empty text frame closes its stdin; bytes 0-255 intact', async () => {
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const input = Buffer.concat([Buffer.from('hello\n'), all, all]);
    const r = await wsExec('u1', ['cat'], {}, input);
    assert.equal(r.status, 0);
    assert.ok(r.out.data.equals(input), `cat echoed ${r.out.data.length} bytes, sent ${input.length}`);
    // stdin data before EOF, sent in pieces while the command runs
    const s = await execWithSockets(api, d.socketPath, 'u1', { command: ['sh', '-c', 'read a; read b; echo "$b-$a"'] });
    s.write('one\n');
    s.write('two\n');
    s.eof();
    const op = await s.done();
    await s.received['1']!.closed;
    assert.equal(op.metadata.return, 0);
    assert.equal(s.received['1']!.data.toString(), 'two-one\n');
    // 8 MiB of stdin in 64 KiB frames, faster than the command reads: all of it, in order
    const big = randomBytes(8 * 1024 * 1024);
    const h = await execWithSockets(api, d.socketPath, 'u1', { command: ['sha256sum'] });
    for (let at = 0; at < big.length; at += 64 * 1024) h.write(big.subarray(at, at + 64 * 1024));
    h.eof();
    const hop = await h.done();
    assert.equal(hop.metadata.return, 0);
    await h.received['1']!.closed;
    assert.equal(h.received['1']!.data.toString().split(/\s+/)[0], sha256(big));
  });

  test('large binary output (6 MB from /dev/urandom) arrives intact on stdout', async () => {
    const size = 6 * 1024 * 1024 + 123;
    const r = await wsExec('u1', [
      'sh',
      '-c',
      `head -c ${size} /dev/urandom > /tmp/big && sha256sum /tmp/big >&2 && cat /tmp/big && rm /tmp/big`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.out.data.length, size);
    assert.equal(sha256(r.out.data), r.stderr.split(/\s+/)[0]);
  });

  test('exit statuses: missing command 127, signal via control → 128+15, nothing left running', async () => {
    const missing = await wsExec('u1', ['/no/such/program']);
    assert.equal(missing.status, 127);
    assert.equal(await quietExec('u1', ['no-such-command']), 127);

    const s = await execWithSockets(api, d.socketPath, 'u1', { command: ['sleep', '4321'] });
    const pids = await eventually(async () => {
      const p = await hostPids(['sleep', '4321']);
      return p.length ? p : undefined;
    }, 'sleep 4321 running');
    s.control({ command: 'signal', signal: 15 });
    const op = await s.done();
    assert.equal(op.status, 'Success', op.err);
    assert.equal(op.metadata.return, 128 + 15);
    assert.deepEqual(await hostPids(['sleep', '4321']), [], `sleep ${pids.join(',')} is gone`);

    // SIGHUP too (extension container_exec_signal_handling)
    const h = await execWithSockets(api, d.socketPath, 'u1', {
      command: ['sh', '-c', 'trap "echo hup; exit 42" HUP; echo ready; while :; do sleep 1; done'],
    });
    await eventually(() => h.received['1']!.data.toString().includes('ready'), 'the trap to be set');
    h.control({ command: 'signal', signal: 1 });
    const hop = await h.done();
    assert.equal(hop.metadata.return, 42);
    await h.received['1']!.closed;
    assert.equal(h.received['1']!.data.toString(), 'ready\nhup\n');
  });

  test('a background process holding stdout open does not hold up the end of the command', async () => {
    const t0 = Date.now();
    const r = await wsExec('u1', ['sh', '-c', 'sleep 4 & echo hi']);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, 'hi\n');
    assert.ok(Date.now() - t0 < 3_500, `took ${Date.now() - t0} ms`);
  });

  test('a client vanishing from the control socket (no close frame) kills the command', async () => {
    const s = await execWithSockets(api, d.socketPath, 'u1', { command: ['sleep', '4324'] });
    await eventually(async () => (await hostPids(['sleep', '4324'])).length > 0, 'sleep 4324 running');
    s.sockets.control!.terminate();
    const op = await s.done();
    assert.equal(op.metadata.return, 128 + 9);
    assert.deepEqual(await hostPids(['sleep', '4324']), []);
  });

  test('the command starts only once every data socket is connected', async () => {
    const s = await execWithSockets(
      api,
      d.socketPath,
      'u1',
      { command: ['sh', '-c', 'echo started > /tmp/started-marker'] },
      ['control', '0', '1'],
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await quietExec('u1', ['test', '-e', '/tmp/started-marker']), 1, 'not started with fd 2 missing');
    const late = await openOperationSocket(d.socketPath, s.operation, s.fds['2']!);
    s.eof();
    const op = await s.done();
    late.close();
    assert.equal(op.metadata.return, 0);
    assert.equal(await quietExec('u1', ['test', '-e', '/tmp/started-marker']), 0);
  });

  test('data sockets that never connect: the operation fails after 10 s and nothing ran', async () => {
    const res = await api.post('/1.0/containers/u1/exec', {
      command: ['touch', '/tmp/never-run'],
      'wait-for-websocket': true,
    });
    assert.equal(res.status, 202);
    await openOperationSocket(d.socketPath, res.json.operation, res.json.metadata.metadata.fds.control);
    const op = (await api.get(`${res.json.operation}/wait?timeout=30`)).json.metadata;
    assert.equal(op.status, 'Failure');
    assert.match(op.err, /websocket.*not started/);
    assert.equal(await quietExec('u1', ['test', '-e', '/tmp/never-run']), 1);
    // its secrets are void now
    const late = await openOperationSocket(d.socketPath, res.json.operation, res.json.metadata.metadata.fds['0']).then(
      () => 0,
      (e: { status?: number }) => e.status,
    );
    assert.equal(late, 403);
  });

  test('interactive: a PTY of width×height, window-resize, typed text echoed, exit status', async () => {
    const s = await execWithSockets(api, d.socketPath, 'u1', {
      command: ['sh'],
      interactive: true,
      width: 100,
      height: 30,
      environment: { TERM: 'xterm' },
    });
    assert.deepEqual(Object.keys(s.fds).sort(), ['0', 'control']);
    const screen = () => s.received['0']!.data.toString();
    // Typed before the prompt, input would be taken by ash's cursor position query.
    await eventually(() => screen().includes('# '), `the prompt in ${JSON.stringify(screen())}`);
    s.write('stty size\r');
    await eventually(() => screen().includes('30 100'), `stty size 30 100 in ${JSON.stringify(screen())}`);
    s.control({ command: 'window-resize', args: { width: '132', height: '43' } });
    await new Promise((r) => setTimeout(r, 200));
    s.write('stty size; tty\r');
    await eventually(() => screen().includes('43 132'), `stty size 43 132 in ${JSON.stringify(screen())}`);
    assert.match(screen(), /\/dev\/pts\/\d+/);
    s.write('echo typed-$((6*7))\r');
    await eventually(() => screen().includes('typed-42'), 'the echo');
    s.write('exit 5\r');
    const op = await s.done();
    assert.equal(op.status, 'Success', op.err);
    assert.equal(op.metadata.return, 5);
    await s.received['0']!.closed;
    assert.deepEqual(s.received['0']!.texts, []);
  });

  test('environment, user, group and working directory', async () => {
    const env = await wsExec('u1', ['env'], { environment: { LANG: 'de_DE.UTF-8', EXTRA: 'a b=c' } });
    const vars = Object.fromEntries(
      env.stdout
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.equal(vars.PATH, '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
    assert.equal(vars.HOME, '/root');
    assert.equal(vars.USER, 'root');
    assert.equal(vars.LANG, 'de_DE.UTF-8', 'the request overrides the defaults');
    assert.equal(vars.EXTRA, 'a b=c');
    assert.equal(vars.FROM_CONFIG, 'cfg', 'environment.* of the container config');
    assert.equal(vars.NODE_OPTIONS, undefined, 'nothing of the daemon environment');
    assert.equal((await wsExec('u1', ['pwd'])).stdout, '/root\n', 'default: the home directory');
    assert.equal((await wsExec('u1', ['pwd'], { cwd: '/tmp' })).stdout, '/tmp\n');
    const bad = await wsExec('u1', ['pwd'], { cwd: '/does/not/exist' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /does\/not\/exist/);
    assert.match((await wsExec('u1', ['id'], { user: 1000, group: 1001 })).stdout, /^uid=1000 gid=1001\b/);
  });

  test('unprivileged and privileged containers: root inside is uid 0, mapped on the host only when unprivileged; lxc-attach skips its self-copy only when unprivileged', async () => {
    for (const [name, hostUid] of [
      ['u1', 1000000],
      ['p1', 0],
    ] as const) {
      assert.equal((await wsExec(name, ['id', '-u'])).stdout, '0\n', name);
      const s = await execWithSockets(api, d.socketPath, name, { command: ['sleep', '4322'] });
      const [pid] = await eventually(async () => {
        const p = await hostPids(['sleep', '4322']);
        return p.length ? p : undefined;
      }, 'sleep 4322');
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      assert.equal(Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]), hostUid, `${name}: host uid of its root`);
      // lxc-attach (the command's parent) skips its self-copy into a memfd only where container root is not host root.
      const attach = await readlink(`/proc/${Number(/^PPid:\s+(\d+)/m.exec(status)?.[1])}/exe`);
      if (name === 'u1')
        assert.match(
          attach,
          /\/\.lxc-attach-\d+-\d+ \(deleted\)$/,
          `${name}: lxc-attach from the spawn helper's private copy`,
        );
      else assert.match(attach, /^\/memfd:lxc-attach/, `${name}: lxc-attach from its own sealed memfd`);
      s.control({ command: 'signal', signal: 9 });
      assert.equal((await s.done()).metadata.return, 128 + 9);
    }
  });

  test("execs leave no lines of lxc-attach's in the container's lxc.log", async () => {
    const attachLines = async () => {
      const r = await api.get('/1.0/containers/u1/logs/lxc.log');
      assert.equal(r.status, 200);
      return r.text.split('\n').filter((l) => l.startsWith('lxc-attach ')).length;
    };
    const before = await attachLines();
    for (let i = 0; i < 3; i++) assert.equal(await quietExec('u1', ['true']), 0);
    assert.equal((await wsExec('u1', ['true'])).status, 0);
    assert.equal(await attachLines(), before);
  });

  test('without websockets: the status, and record-output files served by the logs API', async () => {
    assert.equal(await quietExec('p1', ['sh', '-c', 'exit 4']), 4);
    const res = await api.post('/1.0/containers/u1/exec', {
      command: ['sh', '-c', 'echo to-out; echo to-err >&2; exit 2'],
      'wait-for-websocket': false,
      'record-output': true,
    });
    const op = await waitOp(api, res);
    assert.equal(op.class, 'task');
    assert.equal(op.metadata.return, 2);
    const id = op.id as string;
    assert.deepEqual(op.metadata.output, {
      '1': `/1.0/containers/u1/logs/exec_${id}.stdout`,
      '2': `/1.0/containers/u1/logs/exec_${id}.stderr`,
    });
    assert.equal((await api.get(op.metadata.output['1'])).text, 'to-out\n');
    assert.equal((await api.get(op.metadata.output['2'])).text, 'to-err\n');
    const logs = (await api.get('/1.0/containers/u1/logs')).json.metadata as string[];
    assert.ok(logs.includes(op.metadata.output['1']) && logs.includes(op.metadata.output['2']), logs.join(' '));
    // without record-output nothing is written
    const quiet = await waitOp(
      api,
      await api.post('/1.0/containers/u1/exec', { command: ['echo', 'x'], 'wait-for-websocket': false }),
    );
    assert.equal(quiet.metadata.output, undefined);
    assert.equal(
      (await api.get('/1.0/containers/u1/logs')).json.metadata.filter((l: string) => l.includes(quiet.id)).length,
      0,
    );
  });

  test('websocket secrets: a wrong or reused one is refused with 403', async () => {
    const s = await execWithSockets(api, d.socketPath, 'u1', { command: ['cat'] }, ['control', '0', '1', '2']);
    const refused = (secret: string) =>
      openOperationSocket(d.socketPath, s.operation, secret).then(
        () => 0,
        (e: { status?: number }) => e.status,
      );
    assert.equal(await refused('0'.repeat(64)), 403);
    assert.equal(await refused(s.fds['1']!), 403, 'reused');
    s.eof();
    assert.equal((await s.done()).metadata.return, 0);
  });

  test('refusals: bad bodies 400, unknown container 404, stopped container 400', async () => {
    const bad: [unknown, RegExp][] = [
      [{}, /command.*required/],
      [{ command: [] }, /command/],
      [{ command: 'ls' }, /command/],
      [{ command: [1] }, /command/],
      [{ command: [''] }, /command/],
      [{ command: ['ls'], environment: ['A=1'] }, /environment/],
      [{ command: ['ls'], environment: { 'A=B': 'x' } }, /environment/],
      [{ command: ['ls'], 'wait-for-websocket': 'yes' }, /wait-for-websocket/],
      [{ command: ['ls'], 'wait-for-websocket': true, 'record-output': true }, /record-output/],
      [{ command: ['ls'], width: -1 }, /width/],
      [{ command: ['ls'], height: 1.5 }, /height/],
      [{ command: ['ls'], user: 'root' }, /user/],
      [{ command: ['ls'], group: -1 }, /group/],
      [{ command: ['ls'], cwd: 'tmp' }, /cwd/],
    ];
    for (const [body, msg] of bad)
      assert.match(expectError(await api.post('/1.0/containers/u1/exec', body), 400), msg, JSON.stringify(body));
    expectError(await api.post('/1.0/containers/nope/exec', { command: ['ls'] }), 404);
    assert.match(
      expectError(await api.post('/1.0/containers/s1/exec', { command: ['ls'], 'wait-for-websocket': true }), 400),
      /not running/,
    );
  });

  test('lxc exec (Debian lxc CLI, pipes): exit status and streams', async () => {
    const r = await lxc.run(['exec', 'u1', '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    assert.equal(r.code, 7, r.stderr);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    const cat = await lxc.run(['exec', 'p1', '--', 'cat'], 'piped through\n');
    assert.equal(cat.code, 0, cat.stderr);
    assert.equal(cat.stdout, 'piped through\n');
    assert.equal((await lxc.run(['exec', 'u1', '--', 'no-such-command'])).code, 127);
    const opts = await lxc.run([
      'exec',
      'u1',
      '--env',
      'GREETING=hi there',
      '--',
      'sh',
      '-c',
      'pwd; echo "$GREETING"; id -u',
    ]);
    assert.equal(opts.code, 0, opts.stderr);
    assert.equal(opts.stdout, '/root\nhi there\n0\n');
    assert.match(await lxc.fail(['exec', 's1', '--', 'true']), /not running/);
  });

  test('lxc exec -t with its input piped: the first line reaches the command (not discarded when lxc-attach makes the terminal raw)', async () => {
    const r = await lxc.run(
      ['exec', 'u1', '-t', '--', 'sh', '-c', 'read line; echo "got $line"; exit 4'],
      'first line\n',
    );
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stdout, /got first line/);
  });

  test('lxc exec forwards a SIGTERM it receives through the control socket (container_exec_signal_handling)', async () => {
    const ext = (await api.get('/1.0')).json.metadata.api_extensions as string[];
    assert.ok(ext.includes('container_exec_signal_handling') && ext.includes('container_exec_recording'));
    const child = lxc.spawn(['exec', 'u1', '--', 'sleep', '4323']);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await eventually(async () => (await hostPids(['sleep', '4323'])).length > 0, 'sleep 4323 running');
    child.kill('SIGTERM');
    assert.equal(await exited, 128 + 15);
    await eventually(async () => (await hostPids(['sleep', '4323'])).length === 0, 'sleep 4323 gone');
  });

  test('lxc exec in a terminal (tmux): interactive shell, size, typed commands, exit', async () => {
    const sock = `svcd-exec-${process.pid}`;
    const tmux = (...args: string[]) =>
      run('tmux', ['-L', sock, ...args], { env: { PATH: process.env.PATH!, TERM: 'xterm' } });
    try {
      await tmux(
        'new-session',
        '-d',
        '-s',
        'x',
        '-x',
        '90',
        '-y',
        '25',
        'env',
        `LXD_DIR=${d.stateDir}`,
        `LXD_CONF=${lxc.conf}`,
        `HOME=${lxc.conf}`,
        'lxc',
        'exec',
        'u1',
        '--',
        'sh',
      );
      const pane = async () => (await tmux('capture-pane', '-p', '-t', 'x')).stdout;
      await eventually(async () => (await pane()).includes('#'), 'the shell prompt', 20_000);
      await tmux('send-keys', '-t', 'x', 'stty size; echo sum-$((40+2))', 'Enter');
      await eventually(async () => /sum-42/.test(await pane()), 'the typed command to run');
      assert.match(await pane(), /^25 90$/m);
      await tmux('resize-window', '-t', 'x', '-x', '100', '-y', '30').catch(() =>
        tmux('resize-pane', '-t', 'x', '-x', '100', '-y', '30'),
      );
      await new Promise((r) => setTimeout(r, 300));
      await tmux('send-keys', '-t', 'x', 'clear; stty size', 'Enter');
      await eventually(async () => /^30 100$/m.test(await pane()), 'the new size');
      await tmux('send-keys', '-t', 'x', 'exit', 'Enter');
      await eventually(
        async () =>
          await tmux('has-session', '-t', 'x').then(
            () => false,
            () => true,
          ),
        'lxc exec to end with the shell',
      );
    } finally {
      await tmux('kill-server').catch(() => {});
    }
  });

  test("pylxd: container.execute(['echo', 'hi'])", async () => {
    const script = String.raw`
import json, pylxd
c = pylxd.Client().containers.get('u1')
r = c.execute(['echo', 'hi'])
e = c.execute(['sh', '-c', 'echo oops >&2; exit 3'])
print(json.dumps({'code': r.exit_code, 'out': r.stdout, 'err': r.stderr, 'code2': e.exit_code, 'err2': e.stderr}))
`;
    const { stdout } = await run('/usr/bin/python3', ['-c', script], {
      env: { PATH: '/usr/bin:/bin', LXD_DIR: d.stateDir, PYTHONDONTWRITEBYTECODE: '1' },
      timeout: 60_000,
    });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    assert.deepEqual(out, { code: 0, out: 'hi\n', err: '', code2: 3, err2: 'oops\n' });
  });
  test('exec operations are stored: a short one with its end (found after a restart), a long one while it runs', async () => {
    const short = await waitOp(
      api,
      await api.post('/1.0/containers/u1/exec', { command: ['true'], 'wait-for-websocket': false }),
    );
    assert.equal(short.status_code, 200);
    const long = await api.post('/1.0/containers/u1/exec', { command: ['sleep', '30'], 'wait-for-websocket': false });
    assert.equal(long.status, 202);
    const longId = long.json.metadata.id as string;
    // Longer than 250 ms: its row is written as running (then svcd stops under it).
    await new Promise((r) => setTimeout(r, 600));
    await d.stop();
    await d.restart();
    const found = await api.get(`/1.0/operations/${short.id}`);
    assert.equal(found.status, 200, found.text);
    assert.equal(found.json.metadata.status_code, 200);
    assert.equal(found.json.metadata.metadata.return, 0);
    const orphan = await api.get(`/1.0/operations/${longId}`);
    assert.equal(orphan.status, 200, orphan.text);
    assert.equal(orphan.json.metadata.status_code, 400);
    assert.match(orphan.json.metadata.err, /svcd stopped while this operation was running/);
  });
  test('recorded output older than 48 hours is removed (at daemon start, then hourly); newer output stays', async () => {
    const op = await waitOp(
      api,
      await api.post('/1.0/containers/u1/exec', {
        command: ['sh', '-c', 'echo o; echo e >&2'],
        'wait-for-websocket': false,
        'record-output': true,
      }),
    );
    const [outUrl, errUrl] = [op.metadata.output['1'] as string, op.metadata.output['2'] as string];
    const old = (Date.now() - 49 * 3600_000) / 1000;
    await utimes(path.join(d.stateDir, 'logs', 'default_u1', path.basename(outUrl)), old, old);
    // a clean stop leaves the containers running; the new daemon sweeps at its start
    await d.stop();
    await d.restart();
    await eventually(async () => (await api.get(outUrl)).status === 404, 'the old recorded output to be removed');
    assert.equal((await api.get(errUrl)).text, 'e\n');
    const logs = (await api.get('/1.0/containers/u1/logs')).json.metadata as string[];
    assert.ok(!logs.includes(outUrl) && logs.includes(errUrl), logs.join(' '));
  });
  test('lxc operation list shows a running exec (LXD clients get the map by status; others the spec list)', async () => {
    const res = await api.post('/1.0/containers/u1/exec', { command: ['sleep', '3'], 'wait-for-websocket': false });
    const id = res.json.metadata.id as string;
    const listed = await lxc.ok(['operation', 'list', '--format', 'csv']);
    const line = listed.split('\n').find((l) => l.startsWith(`${id},`));
    assert.ok(line, listed);
    assert.match(line!, /,RUNNING,/);
    assert.ok(((await api.get('/1.0/operations')).json.metadata as string[]).includes(`/1.0/operations/${id}`));
    await waitOp(api, res);
  });
});

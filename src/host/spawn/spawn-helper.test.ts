import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostCommandError, runCommand } from '../exec.ts';
import { stopSpawnHelper } from './spawn-helper.ts';

test('runCommand through the spawn helper: stdout, stdin bytes, exit status and stderr of a failure', async () => {
  assert.equal(
    await runCommand('sh', ['-c', 'echo "$0 $1"', 'a', 'b c']),
    'a b c',
    'argv is passed as is, no shell string',
  );
  assert.equal(
    await runCommand('cat', [], { input: Buffer.from([0, 1, 2, 255]) }).then((s) => Buffer.from(s, 'latin1').length),
    4,
  );
  const err = await runCommand('sh', ['-c', 'echo bad >&2; exit 3']).catch((e: unknown) => e);
  assert.ok(err instanceof HostCommandError);
  assert.equal(err.exitCode, 3);
  assert.equal(err.stderr, 'bad');
  assert.deepEqual(err.command, ['sh', '-c', 'echo bad >&2; exit 3']);
});

test('runCommand: environment, timeout and cancellation reach the command', async () => {
  assert.equal(await runCommand('sh', ['-c', 'echo $SVCD_T'], { env: { SVCD_T: 'x1' } }), 'x1');
  await assert.rejects(runCommand('sleep', ['5'], { timeoutMs: 100 }), /timed out/);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  const t0 = Date.now();
  await assert.rejects(runCommand('sleep', ['5'], { signal: ac.signal }), /cancelled/);
  assert.ok(Date.now() - t0 < 4000, 'the command was killed, not waited for');
  await assert.rejects(
    runCommand('/nonexistent/command', []),
    (e: unknown) => e instanceof HostCommandError && /could not be started: .*ENOENT/.test(e.message),
  );
});

test('runCommand: a command that leaves a daemon holding its output has ended when it exits', async () => {
  const t0 = Date.now();
  // the background sleep keeps stdout open for 30 s
  assert.equal(await runCommand('sh', ['-c', 'sleep 30 & echo started']), 'started');
  assert.ok(Date.now() - t0 < 3000, `resolved after ${Date.now() - t0} ms`);
  await assert.rejects(runCommand('sh', ['-c', 'kill -KILL $$']), /was killed by SIGKILL/);
  assert.equal(await runCommand('printf', ['a\\r\\n\\n']), 'a\r\n', 'only one final newline is stripped');
});

test('a helper that dies fails the commands in flight, and the next command starts a new one', async () => {
  const inFlight = runCommand('sleep', ['5']);
  await new Promise((r) => setTimeout(r, 100));
  stopSpawnHelper();
  await assert.rejects(inFlight, /spawn helper process exited|was cancelled|exited with|signal|killed by SIGTERM/);
  assert.equal(await runCommand('echo', ['again']), 'again');
});

test('a stream joined to a unix socket svcd listens on: stdin and stdout share one connection, byte-exact', async () => {
  const { createHash, randomBytes } = await import('node:crypto');
  const { mkdtemp, rm } = await import('node:fs/promises');
  const net = await import('node:net');
  const os = await import('node:os');
  const path = await import('node:path');
  const { spawnStreamed } = await import('./spawn-helper.ts');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-spawn-sock-'));
  const sockPath = path.join(dir, 's.sock');
  const server = net.createServer();
  const connections: import('node:net').Socket[] = [];
  server.on('connection', (c) => connections.push(c));
  await new Promise<void>((r) => server.listen(sockPath, r));
  try {
    const data = randomBytes(4 * 1024 * 1024);
    const target = { socket: sockPath };
    const p = await spawnStreamed('cat', [], { stdin: target, stdout: target, stderr: 'ignore' });
    assert.equal(p.stdin, null);
    assert.equal(p.stdout, null);
    while (!connections.length) await new Promise((r) => setTimeout(r, 10));
    const sock = connections[0]!;
    const out = createHash('sha256');
    const done = new Promise<void>((resolve) => sock.on('end', resolve));
    sock.on('data', (d: Buffer) => out.update(d));
    sock.end(data);
    await done;
    assert.deepEqual(await p.exited, { exitCode: 0 });
    assert.equal(out.digest('hex'), createHash('sha256').update(data).digest('hex'));
    assert.equal(connections.length, 1, 'one connection for both streams');
    // A socket nobody listens on: the start fails, nothing runs.
    await assert.rejects(
      spawnStreamed('cat', [], { stdin: { socket: path.join(dir, 'none.sock') }, stdout: 'ignore', stderr: 'ignore' }),
    );
  } finally {
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('streamed pipes: stdin to stdout byte-exact with backpressure, stderr apart, exit code and signal', async () => {
  const { createHash, randomBytes } = await import('node:crypto');
  const { spawnStreamed } = await import('./spawn-helper.ts');
  const data = randomBytes(8 * 1024 * 1024);
  const p = await spawnStreamed('sh', ['-c', 'cat; echo done >&2; exit 4'], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  assert.ok(p.pid > 0);
  const out = createHash('sha256');
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const outDone = new Promise<void>((resolve) => {
    // a slow reader: the relay must pause the helper rather than buffer everything
    p.stdout!.on('data', (d: Buffer) => {
      out.update(d);
      p.stdout!.pause();
      setImmediate(() => p.stdout!.resume());
    });
    p.stdout!.on('end', resolve);
  });
  p.stdin!.end(data);
  await outDone;
  assert.deepEqual(await p.exited, { exitCode: 4 });
  assert.equal(out.digest('hex'), createHash('sha256').update(data).digest('hex'));
  assert.equal(err, 'done\n');

  const sleeper = await spawnStreamed('sleep', ['30'], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' });
  sleeper.kill('SIGTERM');
  assert.deepEqual(await sleeper.exited, { signal: 'SIGTERM' });
  await assert.rejects(
    spawnStreamed('/nonexistent/x', [], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' }),
    /ENOENT/,
  );
});

test('streamed output appended to an existing file, never through a symlink', async () => {
  const { mkdtemp, readFile, rm, symlink, writeFile } = await import('node:fs/promises');
  const os = await import('node:os');
  const path = await import('node:path');
  const { spawnStreamed } = await import('./spawn-helper.ts');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'spawn-append-'));
  try {
    const file = path.join(dir, 'out');
    await writeFile(file, 'a\n');
    const p = await spawnStreamed('echo', ['b'], { stdin: 'ignore', stdout: { appendTo: file }, stderr: 'ignore' });
    assert.deepEqual(await p.exited, { exitCode: 0 });
    assert.equal(await readFile(file, 'utf8'), 'a\nb\n');
    await symlink(file, path.join(dir, 'link'));
    await assert.rejects(
      spawnStreamed('echo', ['c'], { stdin: 'ignore', stdout: { appendTo: path.join(dir, 'link') }, stderr: 'ignore' }),
      /ELOOP/,
    );
    assert.equal(await readFile(file, 'utf8'), 'a\nb\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('streamed PTY: size, resize, input echoed, exit status', async () => {
  const { spawnPtyStreamed } = await import('./spawn-helper.ts');
  const t = await spawnPtyStreamed('sh', [], { cols: 91, rows: 27, env: { PATH: '/usr/bin:/bin' } });
  let out = '';
  t.onData((d) => (out += d.toString()));
  const waitFor = async (re: RegExp) => {
    for (let i = 0; i < 200 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 25));
    assert.match(out, re);
  };
  t.write(Buffer.from('stty size\n'));
  await waitFor(/27 91/);
  t.resize(100, 40);
  t.write(Buffer.from('stty size; exit 6\n'));
  await waitFor(/40 100/);
  assert.deepEqual(await t.exited, { exitCode: 6 });
});

test('streamed PTY: input sent before the program made its terminal raw (TCSAFLUSH, as lxc-attach does) is not lost', async () => {
  const { spawnPtyStreamed } = await import('./spawn-helper.ts');
  const prog =
    'import sys, termios, time, tty\ntime.sleep(0.3)\ntty.setraw(0, termios.TCSAFLUSH)\nsys.stdout.write(repr(sys.stdin.read(5)))\nsys.stdout.flush()';
  const t = await spawnPtyStreamed('python3', ['-c', prog], { cols: 80, rows: 24, env: { PATH: '/usr/bin:/bin' } });
  let out = '';
  t.onData((d) => (out += d.toString()));
  t.write(Buffer.from('hello'));
  const exited = await Promise.race([t.exited, new Promise((r) => setTimeout(() => r('timeout'), 5_000))]);
  if (exited === 'timeout') t.kill('SIGKILL');
  assert.deepEqual(exited, { exitCode: 0 }, `the program got its input: ${JSON.stringify(out)}`);
  assert.match(out, /'hello'/);
});

test('copyIn: the program runs from an unlinked private copy, reused until the program on disk changes', async () => {
  const { copyFile, appendFile, mkdtemp, readdir, readFile, rm } = await import('node:fs/promises');
  const path = await import('node:path');
  const { spawnStreamed } = await import('./spawn-helper.ts');
  const dir = await mkdtemp('/var/tmp/svcd-copy-');
  try {
    const prog = path.join(dir, 'prog');
    await copyFile('/bin/sh', prog);
    const original = await readFile(prog);
    const copyDir = path.join(dir, 'copies');
    await (await import('node:fs/promises')).mkdir(copyDir, { mode: 0o700 });
    const runningFrom = async () => {
      const p = await spawnStreamed(prog, ['-c', 'readlink /proc/$$/exe'], {
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'ignore',
        copyIn: copyDir,
      });
      let out = '';
      p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => p.stdout!.on('end', r));
      assert.deepEqual(await p.exited, { exitCode: 0 });
      return out.trim();
    };
    const first = await runningFrom();
    assert.match(first, new RegExp(`^${copyDir}/\\.prog-\\d+-\\d+ \\(deleted\\)$`));
    assert.equal(await runningFrom(), first, 'the same copy again');
    assert.deepEqual(await readdir(copyDir), [], 'nothing left on disk');
    await appendFile(prog, Buffer.from([0])); // an "upgrade"
    const second = await runningFrom();
    assert.match(second, /\(deleted\)$/);
    assert.notEqual(second, first, 'a new copy of the changed program');
    assert.deepEqual((await readFile(prog)).subarray(0, original.length), original, 'the program itself is untouched');
    // Without copyIn the program runs as it is.
    const p = await spawnStreamed(prog, ['-c', 'readlink /proc/$$/exe'], {
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'ignore',
    });
    let out = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((r) => p.stdout!.on('end', r));
    await p.exited;
    assert.equal(out.trim(), prog);
  } finally {
    stopSpawnHelper();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a command inherits only its three standard streams, default signal handling, and the uid and gid asked for', async () => {
  // ls opens the directory itself: 3 is its own
  assert.equal(await runCommand('ls', ['/proc/self/fd']), '0\n1\n2\n3');
  const status = await runCommand('cat', ['/proc/self/status']);
  assert.match(status, /^SigBlk:\s+0+$/m, 'no signal blocked');
  assert.match(status, /^SigIgn:\s+0+$/m, 'no signal ignored (the helper ignores SIGPIPE for itself)');
  assert.equal(
    await runCommand('sh', ['-c', 'id -u; id -g; id -G'], { uid: 65534, gid: 65534 }),
    '65534\n65534\n65534',
    'no supplementary group kept',
  );
  assert.equal(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, for sh to read
    await runCommand('sh', ['-c', 'echo ${HOME-unset} $A'], { env: { A: 'only' }, extendEnv: false }),
    'unset only',
    'extendEnv false: nothing of svcd environment',
  );
});

test('buffered commands: input and output larger than a pipe, byte-exact; many at once', async () => {
  const { createHash, randomBytes } = await import('node:crypto');
  const data = randomBytes(3 * 1024 * 1024);
  const sum = await runCommand('sha256sum', [], { input: data });
  assert.equal(sum.split(' ')[0], createHash('sha256').update(data).digest('hex'));
  const big = await runCommand('head', ['-c', String(8 * 1024 * 1024), '/dev/zero']);
  assert.equal(big.length, 8 * 1024 * 1024);
  const many = await Promise.all(Array.from({ length: 200 }, (_, i) => runCommand('echo', [String(i)])));
  assert.deepEqual(
    many,
    Array.from({ length: 200 }, (_, i) => String(i)),
  );
});

test('svcd killed with SIGKILL: the helper sees its socket close, ends what it started and exits', async () => {
  const { spawn } = await import('node:child_process');
  const { readFile } = await import('node:fs/promises');
  const script = `import { spawnStreamed } from ${JSON.stringify(new URL('./spawn-helper.ts', import.meta.url).href)};
const p = await spawnStreamed('sleep', ['300'], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' });
console.log(p.pid);
setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const sleepPid = Number(
    await new Promise<string>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))),
  );
  const helperPid = Number((await readFile(`/proc/${sleepPid}/stat`, 'utf8')).split(') ')[1]!.split(' ')[1]);
  assert.match(await readFile(`/proc/${helperPid}/cmdline`, 'utf8'), /svcd-spawn/);
  parent.kill('SIGKILL');
  const gone = async (pid: number) => {
    for (let i = 0; i < 100; i++) {
      const st = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (st === '' || / Z /.test(st)) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  };
  assert.ok(await gone(helperPid), 'the helper exited');
  assert.ok(await gone(sleepPid), 'its command was ended');
});

test('frames: every message of protocol.ts encodes; an unknown signal name is no signal, not an exception', async () => {
  const { encodeFrame } = await import('./frames.ts');
  const kill = encodeFrame({ type: 'kill', id: 7, signal: 'SIGNOPE' as NodeJS.Signals });
  assert.deepEqual([...kill], [9, 0, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0], 'length 9, KILL, id 7, signal 0');
  const run = encodeFrame({
    type: 'run',
    id: 1,
    file: 'echo',
    args: ['é'],
    timeoutMs: 5,
    extendEnv: true,
    env: { A: 'b' },
  });
  assert.equal(run.readUInt32LE(0), run.length - 4, 'the length counts what follows it');
  assert.equal(run.readUInt8(4), 1);
  const { spawnStreamed } = await import('./spawn-helper.ts');
  const p = await spawnStreamed('sleep', ['30'], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' });
  p.kill('SIGNOPE' as NodeJS.Signals);
  p.kill('SIGKILL');
  assert.deepEqual(await p.exited, { signal: 'SIGKILL' });
});

test('a storm of commands (timeouts, cancels, failed starts, kills, terminals) leaves the helper with no descriptor or zombie behind', async () => {
  const { readdir, readFile } = await import('node:fs/promises');
  const { spawnStreamed, spawnPtyStreamed } = await import('./spawn-helper.ts');
  await runCommand('true', []);
  const children = async (pid: number) =>
    (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).split(' ').filter(Boolean).map(Number);
  const helper = (
    await Promise.all(
      (
        await children(process.pid)
      ).map(async (p) => ((await readFile(`/proc/${p}/comm`, 'utf8').catch(() => '')).trim() === 'svcd-spawn' ? p : 0)),
    )
  ).find(Boolean)!;
  assert.ok(helper > 0, 'the helper is a child of this process');
  const fds = async () => (await readdir(`/proc/${helper}/fd`)).length;
  const before = await fds();
  const jobs: Promise<unknown>[] = [];
  for (let i = 0; i < 40; i++) {
    jobs.push(runCommand('sh', ['-c', `echo ${i}`]));
    jobs.push(runCommand('sleep', ['5'], { timeoutMs: 50 }).catch(() => 'timed out'));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    jobs.push(runCommand('sleep', ['5'], { signal: ac.signal }).catch(() => 'cancelled'));
    jobs.push(runCommand('/nonexistent/x', []).catch(() => 'not started'));
    jobs.push(
      spawnStreamed('sh', ['-c', 'cat; sleep 5'], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' }).then(async (p) => {
        p.stdout!.resume();
        p.stderr!.resume();
        p.stdin!.write('x');
        p.kill('SIGKILL');
        return p.exited;
      }),
    );
    if (i % 4 === 0)
      jobs.push(
        spawnPtyStreamed('sh', ['-c', 'exit 3'], { cols: 80, rows: 24, env: { PATH: '/usr/bin:/bin' } }).then((t) => {
          t.onData(() => {});
          return t.exited;
        }),
      );
  }
  const results = await Promise.all(jobs);
  assert.equal(results.length, 40 * 5 + 10);
  // what a killed `sh` left (its `sleep`) may still hold nothing of the helper's: its descriptors are back
  for (let i = 0; i < 50 && (await fds()) !== before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await fds(), before, 'no descriptor left open in the helper');
  const zombies: number[] = [];
  for (const c of await children(helper))
    if (/^\d+ \(.*\) Z/.test(await readFile(`/proc/${c}/stat`, 'utf8').catch(() => ''))) zombies.push(c);
  assert.deepEqual(zombies, [], 'every child reaped');
});

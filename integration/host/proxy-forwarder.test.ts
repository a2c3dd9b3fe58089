/**
 * svcd-proxy and its process management on the real host. A "container": a process in a network and
 * mount namespace the test creates (lo up, a tmpfs of its own at MNT), running busybox httpd on
 * 127.0.0.1:80 and a node upstream (tcp echo on 7001 and 7002 that first says its port, udp echo on
 * 7003, a unix echo at MNT/up.sock that only exists in its mount namespace). Forwarders listen on the
 * host's loopback (or a unix socket) and connect inside. Traffic stays on loopback and unix sockets.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { forwarderBinary } from '../../src/host/proxy/forwarder-args.ts';
import {
  ForwarderError,
  readForwarder,
  startForwarder,
  stopForwarder,
} from '../../src/host/proxy/forwarder-process.ts';
import { createForwarderLauncher, type ForwarderLauncher } from '../../src/host/proxy/forwarder-launcher.ts';
import { createProxyAdapter } from '../../src/host/proxy/proxy-adapter.ts';
import type { ForwarderSpec } from '../../src/host/proxy/types.ts';

const skip = process.getuid?.() !== 0 ? 'needs root' : false;
const tag = process.pid % 100000;
const MNT = `/tmp/t17m${tag}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const UPSTREAM = `
const net = require('node:net'), dgram = require('node:dgram');
for (const port of [7001, 7002]) net.createServer((s) => { s.write('port' + port + ':'); s.pipe(s); }).listen(port, '127.0.0.1');
const u = dgram.createSocket('udp4'); u.on('message', (m, r) => u.send(Buffer.concat([Buffer.from('udp:'), m]), r.port, r.address)); u.bind(7003, '127.0.0.1');
net.createServer((s) => { s.write('unix:'); s.pipe(s); }).listen('${MNT}/up.sock', () => console.log('up'));
`;

async function freePort(): Promise<number> {
  const srv = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => srv.once('listening', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Send `data` on a stream connection, half-close, and read all until the other side ends. */
function exchange(opts: net.NetConnectOpts, data: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(opts, () => s.end(data));
    const chunks: Buffer[] = [];
    s.on('data', (d) => chunks.push(d))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 3000): Promise<void> {
  for (let t = 0; t < ms; t += 50) {
    if (await check()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// Each case twice: forwarders spawned (svcd-proxy --daemon), and launched by svcd's launcher (a fork of it).
for (const mode of ['spawned', 'launched'] as const)
  describe(`svcd-proxy forwarders on the real host (${mode})`, { skip }, () => {
    let ns: ChildProcess;
    let launcher: ForwarderLauncher | undefined;
    const helpers: ChildProcess[] = [];
    let stateDir: string;
    let n = 0;
    const deps = () => ({ stateDir, launcher });
    const spec = (s: Partial<ForwarderSpec> & Pick<ForwarderSpec, 'listen' | 'connect'>): ForwarderSpec => ({
      containerId: 'c1',
      device: `dev${++n}`,
      listenNs: 0,
      connectNs: ns.pid!,
      proxyProtocol: false,
      exitWith: ns.pid!,
      ...s,
    });

    before(async () => {
      stateDir = await mkdtemp(path.join(os.tmpdir(), 't17fwd-'));
      if (mode === 'launched') launcher = createForwarderLauncher({ stateDir, binary: forwarderBinary() });
      await mkdir(MNT, { recursive: true });
      await writeFile(path.join(stateDir, 'upstream.cjs'), UPSTREAM);
      ns = spawn(
        'unshare',
        [
          '--net',
          '--mount',
          '--propagation',
          'private',
          'sh',
          '-c',
          `mount -t tmpfs t17 ${MNT} && ip link set lo up && exec sleep 600`,
        ],
        { stdio: 'ignore' },
      );
      const mine = await readlink('/proc/self/ns/net');
      await waitFor('the namespace', async () => {
        const its = await readlink(`/proc/${ns.pid}/ns/net`).catch(() => mine);
        const comm = await readFile(`/proc/${ns.pid}/comm`, 'utf8').catch(() => '');
        return its !== mine && comm.trim() === 'sleep';
      });
      await mkdir(path.join(stateDir, 'www'));
      await writeFile(path.join(stateDir, 'www', 'index.html'), 'hello from t17\n');
      helpers.push(
        spawn(
          'nsenter',
          [
            '-t',
            String(ns.pid),
            '-n',
            'busybox',
            'httpd',
            '-f',
            '-p',
            '127.0.0.1:80',
            '-h',
            path.join(stateDir, 'www'),
          ],
          { stdio: 'ignore' },
        ),
      );
      const up = spawn(
        'nsenter',
        ['-t', String(ns.pid), '-n', '-m', process.execPath, path.join(stateDir, 'upstream.cjs')],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      helpers.push(up);
      await new Promise((r) => up.stdout!.once('data', r));
    });

    after(async () => {
      for (let i = 1; i <= n; i++) await stopForwarder('c1', `dev${i}`, deps()).catch(() => {});
      for (const h of helpers) h.kill('SIGKILL');
      ns?.kill('SIGKILL');
      await sleep(100);
      await rm(stateDir, { recursive: true, force: true });
      await rm(MNT, { recursive: true, force: true }).catch(() => {});
    });

    it('t17 tcp: an HTTP GET on the host reaches busybox httpd in the namespace', async () => {
      const port = await freePort();
      await startForwarder(spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:80' }), deps());
      const res = await fetch(`http://127.0.0.1:${port}/index.html`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'hello from t17\n');
    });

    it('t17 tcp: a port range maps one to one; half-close passes', async () => {
      const port = await freePort();
      await startForwarder(
        spec({ listen: `tcp:127.0.0.1:${port}-${port + 1}`, connect: 'tcp:127.0.0.1:7001-7002' }),
        deps(),
      );
      assert.equal(String(await exchange({ host: '127.0.0.1', port }, 'a')), 'port7001:a');
      assert.equal(String(await exchange({ host: '127.0.0.1', port: port + 1 }, 'b')), 'port7002:b');
    });

    it('t17 tcp and unix: 24 MiB echoed back arrive whole and in order, both ways at once (buffers full, partial sends, half-close after)', async () => {
      const data = randomBytes(24 << 20);
      const port = await freePort();
      await startForwarder(spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:7001' }), deps());
      const sock = path.join(stateDir, `bulk${n}.sock`);
      await startForwarder(spec({ listen: `unix:${sock}`, connect: `unix:${MNT}/up.sock` }), deps());
      const [tcp, unix] = await Promise.all([
        exchange({ host: '127.0.0.1', port }, data),
        exchange({ path: sock }, data),
      ]);
      assert.equal(tcp.length, 'port7001:'.length + data.length);
      assert.ok(
        tcp.subarray(0, 9).equals(Buffer.from('port7001:')) && tcp.subarray(9).equals(data),
        'tcp: the same bytes',
      );
      assert.equal(unix.length, 'unix:'.length + data.length);
      assert.ok(unix.subarray(5).equals(data), 'unix: the same bytes');
    });

    it('t17 udp: a datagram goes through and its answer comes back', async () => {
      const port = await freePort();
      await startForwarder(spec({ listen: `udp:127.0.0.1:${port}`, connect: 'udp:127.0.0.1:7003' }), deps());
      const sock = dgram.createSocket('udp4');
      try {
        const answer = new Promise<string>((r) => sock.once('message', (m) => r(String(m))));
        sock.send('ping', port, '127.0.0.1');
        assert.equal(await answer, 'udp:ping');
      } finally {
        sock.close();
      }
    });

    it('t17 unix: a path listen socket gets uid, gid and mode, and goes when stopped', async () => {
      const dir = path.join(stateDir, 'sock');
      await mkdir(dir);
      const file = path.join(dir, 'web.sock');
      await writeFile(file, ''); // not a socket: refused, not removed
      const s = spec({
        listen: `unix:${file}`,
        connect: 'tcp:127.0.0.1:7001',
        listenUid: 1234,
        listenGid: 2345,
        listenMode: '0640',
      });
      await assert.rejects(startForwarder(s, deps()), /exists and is not a socket/);
      await rm(file);
      await startForwarder(s, deps());
      const st = await stat(file);
      assert.deepEqual([st.isSocket(), st.uid, st.gid, st.mode & 0o7777], [true, 1234, 2345, 0o640]);
      assert.equal(String(await exchange({ path: file }, 'x')), 'port7001:x');
      const t0 = performance.now();
      await stopForwarder('c1', s.device, deps());
      // SIGTERM is honoured (the daemonized child has its own signalfd), not the SIGKILL after 2 s
      assert.ok(performance.now() - t0 < 1000, `stopped after ${performance.now() - t0} ms`);
      await assert.rejects(stat(file), /ENOENT/);
    });

    it("t17 unix: abstract listen on the host, connect to a path that exists only in the namespace's mounts", async () => {
      await assert.rejects(stat(path.join(MNT, 'up.sock')), /ENOENT/, 'not visible on the host');
      await startForwarder(spec({ listen: `unix:@t17a${tag}`, connect: `unix:${MNT}/up.sock` }), deps());
      // node pads an abstract name to the whole sun_path: python's client uses the name's exact length, as lxd's does
      const client =
        'import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect("\\0"+sys.argv[1])\ns.sendall(b"y")\ns.shutdown(1)\nd=b""\nwhile True:\n  c=s.recv(99)\n  if not c: break\n  d+=c\nprint(d.decode())';
      assert.equal((await runCommand('python3', ['-c', client, `t17a${tag}`])).trim(), 'unix:y');
    });

    it('t17 PROXY v2: the upstream gets the header with the client and listen addresses', async () => {
      const port = await freePort();
      await startForwarder(
        spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:7002', proxyProtocol: true }),
        deps(),
      );
      let clientPort = 0;
      const got = await new Promise<Buffer>((resolve, reject) => {
        const s = net.connect({ host: '127.0.0.1', port }, () => ((clientPort = s.localPort!), s.end('z')));
        const chunks: Buffer[] = [];
        s.on('data', (d) => chunks.push(d))
          .on('end', () => resolve(Buffer.concat(chunks)))
          .on('error', reject);
      });
      const body = got.subarray('port7002:'.length);
      const expected = Buffer.alloc(28);
      Buffer.from('0d0a0d0a000d0a515549540a', 'hex').copy(expected, 0);
      expected.writeUInt8(0x21, 12); // v2, PROXY
      expected.writeUInt8(0x11, 13); // TCP over IPv4
      expected.writeUInt16BE(12, 14);
      Buffer.from([127, 0, 0, 1, 127, 0, 0, 1]).copy(expected, 16);
      expected.writeUInt16BE(clientPort, 24);
      expected.writeUInt16BE(port, 26);
      assert.deepEqual(body.subarray(0, 28), expected);
      assert.equal(String(body.subarray(28)), 'z');
    });

    it("t17 tcp: a burst beyond the upstream's listen backlog is dialled again, not left to the kernel's 1 s, 3 s SYN retries", async () => {
      // An upstream with a backlog of 1 that accepts nothing for 1.5 s: the burst's other SYNs are dropped.
      const server = [
        'import socket, sys, time',
        's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
        's.bind(("127.0.0.1", 7005)); s.listen(1); print("up", flush=True)',
        'time.sleep(1.5)',
        'while True:',
        '  c, _ = s.accept(); c.sendall(b"ok"); c.close()',
      ].join('\n');
      const up = spawn('nsenter', ['-t', String(ns.pid), '-n', 'python3', '-c', server], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      helpers.push(up);
      await new Promise((r) => up.stdout!.once('data', r));
      const port = await freePort();
      await startForwarder(spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:7005' }), deps());
      const t0 = performance.now();
      const one = () =>
        new Promise<number>((resolve, reject) => {
          let got = '';
          const s = net.connect({ host: '127.0.0.1', port });
          s.on('data', (d) => (got += d)).on('error', reject);
          s.on('close', () => (got === 'ok' ? resolve(performance.now() - t0) : reject(new Error(`got "${got}"`))));
        });
      const times = await Promise.all(Array.from({ length: 30 }, one));
      const slowest = Math.max(...times);
      // Dialled again every 250 ms: all answered soon after 1.5 s (the kernel alone: the dropped ones at 3 s or later).
      assert.ok(slowest < 2700, `the slowest of 30 answered after ${slowest.toFixed(0)} ms`);
    });

    it("t17 a listen port in use: the forwarder's error, and no pid file", async () => {
      const holder = net.createServer().listen(0, '127.0.0.1');
      await new Promise((r) => holder.once('listening', r));
      const port = (holder.address() as net.AddressInfo).port;
      try {
        const s = spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:80' });
        await assert.rejects(
          startForwarder(s, deps()),
          (e: unknown) =>
            e instanceof ForwarderError && e.message === `listen tcp:127.0.0.1:${port}: Address already in use`,
        );
        assert.equal(await readForwarder('c1', s.device, deps()), undefined);
        await assert.rejects(stat(path.join(stateDir, 'containers', 'c1', 'proxy', `${s.device}.pid`)), /ENOENT/);
      } finally {
        holder.close();
      }
    });

    it('t17 bad argv: refused with error: and exit 1, before anything is bound', async () => {
      const cases: [string[], RegExp][] = [
        [['--listen', 'tcp:127.0.0.1:1-3', '--connect', 'tcp:127.0.0.1:80,81'], /3 listen ports and 2 connect ports/],
        [['--listen', 'udp:127.0.0.1:5353', '--connect', 'tcp:127.0.0.1:80'], /udp goes to udp only/],
        [['--listen', 'tcp:localhost:80', '--connect', 'tcp:127.0.0.1:80'], /'localhost' is not an IPv4 address/],
        [['--listen', 'tcp:[::1:80', '--connect', 'tcp:127.0.0.1:80'], /bad IPv6 address/],
        [['--listen', 'tcp:127.0.0.1:0', '--connect', 'tcp:127.0.0.1:80'], /bad port '0'/],
        [['--listen', 'unix:rel/path', '--connect', 'tcp:127.0.0.1:80'], /absolute path or @name/],
        [['--listen', 'sctp:1.2.3.4:5', '--connect', 'tcp:127.0.0.1:80'], /must start with tcp:, udp: or unix:/],
        [
          ['--listen', 'tcp:127.0.0.1:80', '--connect', 'tcp:127.0.0.1:80', '--listen-mode', '999'],
          /not an octal mode/,
        ],
        [['--listen', 'tcp:127.0.0.1:80', '--connect', 'tcp:127.0.0.1:80', '--bogus'], /unknown argument '--bogus'/],
      ];
      for (const [args, why] of cases) {
        await assert.rejects(
          runCommand(forwarderBinary(), ['--listen-ns', '0', '--connect-ns', '0', ...args]),
          (e: unknown) => {
            const err = e as { exitCode?: number; stderr?: string };
            assert.equal(err.exitCode, 1, args.join(' '));
            assert.match(err.stderr ?? '', new RegExp(`^error: .*${why.source}`), args.join(' '));
            return true;
          },
        );
      }
    });

    it('t17 --exit-with: the forwarder exits when that process does; privileges dropped', async () => {
      const target = spawn('sleep', ['600'], { stdio: 'ignore' });
      const s = spec({
        listen: `tcp:127.0.0.1:${await freePort()}`,
        connect: 'tcp:127.0.0.1:80',
        exitWith: target.pid!,
        dropUid: 65534,
        dropGid: 65534,
      });
      const pid = await startForwarder(s, deps());
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      assert.match(status, /^Uid:\s+65534\s+65534\s+65534\s+65534$/m);
      assert.match(status, /^Gid:\s+65534\s+65534\s+65534\s+65534$/m);
      assert.deepEqual(await readForwarder('c1', s.device, deps()), {
        pid,
        key: (await readFile(path.join(stateDir, 'containers', 'c1', 'proxy', `${s.device}.pid`), 'utf8')).split(
          '\n',
        )[1],
      });
      target.kill('SIGKILL');
      await waitFor('the forwarder to exit', async () => (await readForwarder('c1', s.device, deps())) === undefined);
    });

    it('t17 adapter: kill -9 drops it from liveForwarders; ensureForwarder restarts it, then leaves it', async () => {
      const proxy = createProxyAdapter({ stateDir, applyNat: async () => {}, launcher });
      const port = await freePort();
      const s = {
        ...spec({ listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:80' }),
        containerId: 'c2',
        device: 'web',
      };
      const first = await proxy.ensureForwarder(s);
      assert.equal(first.started, true);
      assert.deepEqual(await proxy.ensureForwarder(s), { pid: first.pid, started: false });
      assert.deepEqual([...(await proxy.liveForwarders('c2'))], [['web', first.pid]]);
      process.kill(first.pid, 'SIGKILL');
      await waitFor('the forwarder to be dropped', async () => (await proxy.liveForwarders('c2')).size === 0);
      const again = await proxy.ensureForwarder(s);
      assert.equal(again.started, true);
      assert.notEqual(again.pid, first.pid);
      assert.equal((await fetch(`http://127.0.0.1:${port}/index.html`)).status, 200);
      const changed = await proxy.ensureForwarder({ ...s, connect: 'tcp:127.0.0.1:7001' });
      assert.equal(changed.started, true, 'another spec: restarted');
      assert.equal(String(await exchange({ host: '127.0.0.1', port }, 'q')), 'port7001:q');
      await proxy.stopForwarder('c2', 'web');
      await proxy.stopForwarder('c2', 'web');
      assert.equal((await proxy.liveForwarders('c2')).size, 0);
    });

    if (mode === 'launched')
      it('t17 launcher: named by its start time (not a reused pid), started again when killed, gone with svcd', async () => {
        const s = spec({ listen: `tcp:127.0.0.1:${await freePort()}`, connect: 'tcp:127.0.0.1:80' });
        const pid = await startForwarder(s, deps());
        const file = path.join(stateDir, 'containers', 'c1', 'proxy', `${s.device}.pid`);
        const [, key, started] = (await readFile(file, 'utf8')).split('\n');
        assert.match(started!, /^\d+$/, 'a third line: its start time');
        assert.equal(
          (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')[1],
          '--launcher',
          "its cmdline is the launcher's",
        );
        assert.deepEqual(await readForwarder('c1', s.device, deps()), { pid, key });
        await writeFile(file, `${pid}\n${key}\n${Number(started) + 1}\n`);
        assert.equal(await readForwarder('c1', s.device, deps()), undefined, 'another start time: not that forwarder');
        await writeFile(file, `${pid}\n${key}\n${started}\n`);
        await stopForwarder('c1', s.device, deps());
        await assert.rejects(stat(`/proc/${pid}`), 'stopped (and reaped: the launcher ignores SIGCHLD)');
        await assert.rejects(stat(file.replace(/\.pid$/, '.args')), /ENOENT/);

        const sock = path.join(stateDir, 'proxy-launcher.sock');
        // (its forwarders share its cmdline, being forks of it; it alone is called svcd-proxy-lnch)
        const launcherPids = async () =>
          (await runCommand('pgrep', ['-x', 'svcd-proxy-lnch']).catch(() => ''))
            .split('\n')
            .filter(Boolean)
            .map(Number)
            .filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(sock));
        const [first] = await launcherPids();
        assert.ok(first, 'a launcher runs');
        process.kill(first!, 'SIGKILL');
        await waitFor('the launcher to go', async () => !(await launcherPids()).includes(first!));
        const again = spec({ listen: `tcp:127.0.0.1:${await freePort()}`, connect: 'tcp:127.0.0.1:80' });
        await startForwarder(again, deps());
        assert.equal((await launcherPids()).length, 1, 'one new launcher');
        await stopForwarder('c1', again.device, deps());

        // Its --exit-with: a launcher for a process that exits goes, with its socket.
        const svcd = spawn('sleep', ['600'], { stdio: 'ignore' });
        const other = await mkdtemp(path.join(os.tmpdir(), 't17lx-'));
        try {
          const l = createForwarderLauncher({ stateDir: other, binary: forwarderBinary(), exitWith: svcd.pid! });
          const out = await l!.launch(
            ['--listen-ns', '0', '--listen', 'tcp:127.0.0.1:0', '--connect-ns', '0', '--connect', 'tcp:127.0.0.1:80'],
            5000,
          );
          assert.match(out, /^error: .*bad port '0'/, "its child's error comes back on the connection");
          svcd.kill('SIGKILL');
          await waitFor(
            'the launcher to exit with it',
            async () =>
              await stat(path.join(other, 'proxy-launcher.sock')).then(
                () => false,
                () => true,
              ),
          );
        } finally {
          svcd.kill('SIGKILL');
          await rm(other, { recursive: true, force: true });
        }
      });
  });

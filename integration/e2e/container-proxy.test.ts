/**
 * Proxy devices on real LXC: a busybox httpd in a container on a test-made managed network (nothing
 * leaves its bridge) served on 127.0.0.1 through a proxy in tcp, unix and nat modes, a udp echo (the
 * host's python3 in the container's network namespace: busybox nc has no udp here) through a udp proxy;
 * the forwarder killed and repaired; proxies added and removed on the running container; the bad-input
 * refusals; Debian's `lxc config device add ... proxy` unmodified. Traffic goes only to loopback, the
 * test's unix socket and the test's bridge. `after` removes the containers, the network and the socket.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { lxcIdOf, startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, freePort, type Client } from '../support/http.ts';
import { lxcCli } from '../support/lxc-cli.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { freeSubnet24, safeNetworkConfig } from '../support/networks.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping proxy e2e tests: ${skip}`);

/** GET / over tcp (port) or a unix socket; the body, or the error's code. */
function get(target: { port: number } | { socketPath: string }): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(
      {
        ...('port' in target ? { host: '127.0.0.1', port: target.port } : { socketPath: target.socketPath }),
        path: '/',
        timeout: 3_000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
  });
}

/** One datagram to 127.0.0.1:port; the reply, or '' after a second. */
function udpAsk(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    const done = (v: string) => (clearTimeout(t), s.close(), resolve(v));
    const t = setTimeout(() => done(''), 1_000);
    s.on('message', (m) => done(m.toString()));
    s.send(text, port, '127.0.0.1');
  });
}

describe('proxy devices', { skip }, () => {
  const bridge = `t17p${process.pid}`.slice(0, 15);
  const sock = `/tmp/t17p-${process.pid}.sock`;
  let subnet = '';
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let udpServer: ChildProcess | undefined;
  const PAGE = `t17 page ${process.pid}`;

  const exec = async (command: string[]) =>
    runInContainer({ name: await lxcIdOf(d.stateDir, 'p1'), lxcPath: path.join(d.stateDir, 'containers'), command });
  const patchDevices = async (devices: Record<string, Record<string, string> | null>) =>
    api.patch('/1.0/containers/p1', { devices });
  const devicesNow = async () =>
    (await api.get('/1.0/containers/p1')).json.metadata.devices as Record<string, Record<string, string>>;
  const setDevices = async (change: (d: Record<string, Record<string, string>>) => void) => {
    const devs = await devicesNow();
    change(devs);
    return waitOp(
      api,
      await api.put('/1.0/containers/p1', { ...(await api.get('/1.0/containers/p1')).json.metadata, devices: devs }),
    );
  };
  const forwarderPid = async (device: string) => {
    const id = await lxcIdOf(d.stateDir, 'p1');
    return Number(
      (await readFile(path.join(d.stateDir, 'containers', id, 'proxy', `${device}.pid`), 'utf8')).split('\n')[0],
    );
  };

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    const free = await freeSubnet24(7);
    subnet = free.prefix3;
    assert.equal((await api.post('/1.0/networks', { name: bridge, config: safeNetworkConfig(free.cidr) })).status, 200);
    const eth0 = { type: 'nic', network: bridge, 'ipv4.address': `${subnet}.20` };
    await waitOp(
      api,
      await api.post('/1.0/containers', { name: 'p1', source: { type: 'image', alias: 'bb' }, devices: { eth0 } }),
    );
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'start' }));
    await exec(['/bin/mkdir', '-p', '/www']);
    await exec(['/bin/sh', '-c', `echo '${PAGE}' > /www/index.html && /bin/busybox httpd -p 80 -h /www`]);
  });
  after(async () => {
    udpServer?.kill('SIGKILL');
    await teardownContainers(d, api, [imgDir]);
    await rm(sock, { force: true });
  });

  test('t17 tcp: added live, served, killed and repaired, removed live', async () => {
    const port = await freePort();
    await setDevices(
      (devs) => (devs.web = { type: 'proxy', listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:80' }),
    );
    assert.equal((await get({ port })).trim(), PAGE);
    const pid = await forwarderPid('web');
    process.kill(pid, 'SIGKILL');
    const t0 = Date.now();
    await eventually(
      async () => ((await get({ port })).trim() === PAGE ? true : undefined),
      'served again after kill -9',
      10_000,
    );
    const took = Date.now() - t0;
    assert.notEqual(await forwarderPid('web'), pid);
    console.log(`# forwarder repaired in ${took} ms`);
    assert.ok(took < 4_000, `repaired in ${took} ms`);
    await setDevices((devs) => delete devs.web);
    assert.match(await get({ port }), /^error ECONNREFUSED/);
  });

  test('t17 unix listen socket with mode, and udp', async () => {
    await setDevices(
      (devs) =>
        (devs.sock = {
          type: 'proxy',
          listen: `unix:${sock}`,
          connect: 'tcp:127.0.0.1:80',
          mode: '0600',
          uid: '1234',
          gid: '1235',
        }),
    );
    assert.equal((await get({ socketPath: sock })).trim(), PAGE);
    const st = await import('node:fs/promises').then((f) => f.stat(sock));
    assert.deepEqual([st.mode & 0o777, st.uid, st.gid], [0o600, 1234, 1235]);

    const pid = (await api.get('/1.0/containers/p1/state')).json.metadata.pid as number;
    const echo =
      'import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(("127.0.0.1",5000))\nwhile True:\n  d,a=s.recvfrom(2048)\n  s.sendto(b"echo:"+d,a)\n';
    udpServer = spawn('nsenter', ['-t', String(pid), '-n', 'python3', '-c', echo], { stdio: 'ignore' });
    const port = await freePort();
    await setDevices(
      (devs) => (devs.dns = { type: 'proxy', listen: `udp:127.0.0.1:${port}`, connect: 'udp:127.0.0.1:5000' }),
    );
    assert.equal(await eventually(async () => (await udpAsk(port, 'hi')) || undefined, 'udp echo', 10_000), 'echo:hi');
    await setDevices((devs) => (delete devs.sock, delete devs.dns));
  });

  test('t17 port lists and ranges, privilege drop, and the PROXY v2 header from a container-side listener (bind=container)', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    await setDevices(
      (devs) =>
        (devs.multi = {
          type: 'proxy',
          listen: `tcp:127.0.0.1:${p1},${p2}`,
          connect: 'tcp:127.0.0.1:80',
          'security.uid': '65534',
          'security.gid': '65534',
        }),
    );
    for (const port of [p1, p2]) assert.equal((await get({ port })).trim(), PAGE);
    const status = await readFile(`/proc/${await forwarderPid('multi')}/status`, 'utf8');
    assert.match(status, /^Uid:\s+65534\s/m, 'the forwarder runs as security.uid');

    // A host-side server that records what the first connection sends.
    let first = Buffer.alloc(0);
    let resolveGot!: (b: Buffer) => void;
    const got = new Promise<Buffer>((r) => (resolveGot = r));
    const srv = net.createServer((c) => {
      c.on('data', (b) => {
        first = Buffer.concat([first, b]);
        if (first.includes('hello')) c.end(), srv.close(), resolveGot(first);
      });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as net.AddressInfo).port;
    await setDevices(
      (devs) =>
        (devs.pp = {
          type: 'proxy',
          bind: 'container',
          listen: 'tcp:127.0.0.1:7070',
          connect: `tcp:127.0.0.1:${port}`,
          proxy_protocol: 'true',
        }),
    );
    await exec(['/bin/sh', '-c', 'echo hello | /bin/busybox nc 127.0.0.1 7070']);
    const bytes = await got;
    assert.deepEqual(bytes.subarray(0, 12), Buffer.from('0d0a0d0a000d0a515549540a', 'hex'), 'PROXY v2 signature');
    assert.ok(bytes.subarray(12).includes('hello'));
    await setDevices((devs) => (delete devs.multi, delete devs.pp));
  });

  test('t17 nat: DNAT from 127.0.0.1 to the container address, no forwarder', async () => {
    const port = await freePort();
    await setDevices(
      (devs) =>
        (devs.natweb = { type: 'proxy', nat: 'true', listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:0.0.0.0:80' }),
    );
    assert.equal((await get({ port })).trim(), PAGE);
    await assert.rejects(forwarderPid('natweb'));
    const localnet = () => readFile(`/proc/sys/net/ipv4/conf/${bridge}/route_localnet`, 'utf8');
    assert.equal(await localnet(), '1\n', 'a loopback listen routes 127/8 on the bridge');
    await setDevices((devs) => delete devs.natweb);
    assert.match(await get({ port }), /^error/);
    assert.equal(await localnet(), '0\n', 'no rule needs it any more: back off');
    // No container has nat rules left: svcd's table is gone too.
    const { stdout } = await promisify(execFile)('nft', ['list', 'tables']);
    assert.doesNotMatch(stdout, /svcd_proxy/);
  });

  test('t17 bad input is refused with 400 naming the device and key, nothing written', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const busyPort = (busy.address() as net.AddressInfo).port;
    const taken = await freePort();
    await setDevices(
      (devs) => (devs.a = { type: 'proxy', listen: `tcp:127.0.0.1:${taken}`, connect: 'tcp:127.0.0.1:80' }),
    );
    try {
      const cases: [Record<string, string>, RegExp][] = [
        [
          { listen: `tcp:127.0.0.1:${busyPort}`, connect: 'tcp:127.0.0.1:80' },
          new RegExp(`Device "b" \\(proxy\\): "listen" tcp:127.0.0.1:${busyPort} is already in use on the host`),
        ],
        [
          { listen: `tcp:0.0.0.0:${taken}`, connect: 'tcp:127.0.0.1:80' },
          /Device "b" \(proxy\): "listen" .* is already used by device "a"/,
        ],
        [
          { listen: 'tcp:127.0.0.1:9001-9003', connect: 'tcp:127.0.0.1:80,81' },
          /Device "b" \(proxy\): "connect" has 2 ports and "listen" 3/,
        ],
        [{ listen: 'tcp:127.0.0.1:9001', connect: 'tcp:127.0.0.1' }, /Device "b" \(proxy\): invalid "connect"/],
        [
          { listen: 'tcp:127.0.0.1:9001', connect: 'tcp:127.0.0.1:80', colour: 'red' },
          /Device "b" \(proxy\): unknown property "colour"/,
        ],
        [
          { listen: 'tcp:0.0.0.0:9001', connect: 'tcp:0.0.0.0:80', nat: 'true' },
          /Device "b" \(proxy\): "nat" cannot listen on a wildcard/,
        ],
        [
          { listen: 'unix:/tmp/x.sock', connect: 'tcp:0.0.0.0:80', nat: 'true' },
          /Device "b" \(proxy\): "nat" cannot forward unix/,
        ],
        [
          { listen: 'tcp:127.0.0.1:9001', connect: 'tcp:192.0.2.9:80', nat: 'true' },
          /Device "b" \(proxy\): "nat" needs "connect" to be the static "ipv4.address"/,
        ],
        [
          { listen: 'udp:127.0.0.1:9001', connect: 'tcp:127.0.0.1:80' },
          /Device "b" \(proxy\): "connect".*udp only to udp/,
        ],
      ];
      const before = await devicesNow();
      for (const [dev, re] of cases)
        assert.match(expectError(await patchDevices({ b: { type: 'proxy', ...dev } }), 400), re);
      assert.deepEqual(await devicesNow(), before);
    } finally {
      busy.close();
      await setDevices((devs) => delete devs.a);
    }
  });

  test("t17 Debian's lxc config device add ... proxy, unmodified", async () => {
    const lxc = await lxcCli(d.stateDir);
    try {
      const port = await freePort();
      await lxc.ok([
        'config',
        'device',
        'add',
        'p1',
        'web',
        'proxy',
        `listen=tcp:127.0.0.1:${port}`,
        'connect=tcp:127.0.0.1:80',
      ]);
      assert.equal(
        await eventually(async () => ((await get({ port })).trim() === PAGE ? PAGE : undefined), 'served', 10_000),
        PAGE,
      );
      await lxc.ok(['config', 'device', 'remove', 'p1', 'web']);
      await eventually(async () => ((await get({ port })).startsWith('error') ? true : undefined), 'gone', 10_000);
    } finally {
      await lxc.cleanup();
    }
  });

  test('t17 proxies follow the container: gone at stop, back at start', async () => {
    const port = await freePort();
    await setDevices(
      (devs) => (devs.web = { type: 'proxy', listen: `tcp:127.0.0.1:${port}`, connect: 'tcp:127.0.0.1:80' }),
    );
    const pid = await forwarderPid('web');
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'stop', force: true }));
    assert.match(await get({ port }), /^error ECONNREFUSED/);
    assert.equal(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''), '', 'the forwarder exited');
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'start' }));
    await exec(['/bin/busybox', 'httpd', '-p', '80', '-h', '/www']);
    assert.equal((await get({ port })).trim(), PAGE);
  });
});

/**
 * Container config keys and devices applied to real LXC, observed from the host without entering the
 * container where possible: /proc/<pid>/{uid_map,cgroup,limits,environ,status,mountinfo,root}, the
 * cgroup files, `nsenter -n ip` for the NIC, and one `lxc-attach` for seccomp. One unprivileged
 * container is reused (PUT config + restart). The suite makes a private bridge (no addresses, no NAT),
 * a custom volume and a few host directories and mounts under a temp dir; `after` removes all of them,
 * the containers (through the API) and the lxc-monitord this daemon caused, also when a test failed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseSubids } from '../../src/host/idmap/parse-subids.ts';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { cgroupFile } from '../support/cgroup.ts';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { lxcIdOf } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { cleanupHostUnder } from '../support/host-cleanup.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason, monitordFor } from '../support/lxc-host.ts';
import { defaultPoolPath } from '../../src/host/layout.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container config e2e tests: ${skip}`);

type Reply = { status: number; json: any; text: string };

/** The container's file for a v1 controller (this host) or the unified hierarchy. */
/** uid_map lines as [nsid, hostid, count]. */
const uidMap = async (pid: number) =>
  (await readFile(`/proc/${pid}/uid_map`, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));

describe('container config keys and devices on real LXC', { skip }, () => {
  const rand = randomBytes(3).toString('hex');
  const bridge = `svcdt${rand}`;
  const vethHost = `svcdv${rand}`;
  const hwaddr = `00:16:3e:${rand.slice(0, 2)}:${rand.slice(2, 4)}:${rand.slice(4, 6)}`;
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let work = '';
  let share = '';
  const hostMounts: string[] = [];
  let bridgeMade = false;

  const state = (name: string) => api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata);
  async function waitOp(res: Reply, want = 'Success') {
    assert.equal(res.status, 202, res.text);
    const done = await api.get(`${res.json.operation}/wait?timeout=120`);
    assert.equal(done.json.metadata.status, want, done.json.metadata.err);
    return done.json.metadata;
  }
  /** A PUT that the reconciler must refuse: the operation fails with a message matching `re`. */
  async function putFails(name: string, body: unknown, re: RegExp) {
    const op = await waitOp(await api.put(`/1.0/containers/${name}`, body), 'Failure');
    assert.match(op.err, re);
  }
  async function runningPid(name: string, notPid?: number): Promise<number> {
    const s = await eventually(
      async () => {
        const st = await state(name);
        return st.status === 'Running' && st.pid > 0 && st.pid !== notPid ? st : undefined;
      },
      `${name} running${notPid ? ' with a new init' : ''}`,
      30_000,
    );
    return s.pid;
  }
  async function restart(name: string, pid: number): Promise<number> {
    await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'restart', force: true }));
    return runningPid(name, pid);
  }
  /** LXC name (the stable id) of a container, from the configs svcd wrote. */
  const idOf = (name: string) => lxcIdOf(d.stateDir, name);

  before(async () => {
    await ensureRootSubids();
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    const img = await buildBusyboxImage({ dir: imgDir, format: 'unified', compression: 'gzip' });
    if (img.format !== 'unified') throw new Error('unexpected image format');
    // Host directories for disks: an unprivileged container's root must be able to traverse to them.
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-cfg-'));
    await chmod(work, 0o711);
    await mkdir(path.join(work, 'ro'), { mode: 0o755 });
    await writeFile(path.join(work, 'ro', 'hello'), 'from the host\n');
    await mkdir(path.join(work, 'closed', 'inner'), { recursive: true, mode: 0o700 });
    await chmod(path.join(work, 'closed'), 0o700);
    // A shared mount, with a submount made before the container starts and one after.
    share = path.join(work, 'share');
    await mkdir(path.join(share, 'pre'), { recursive: true, mode: 0o755 });
    await mkdir(path.join(share, 'late'), { mode: 0o755 });
    await run('mount', ['--bind', share, share]);
    hostMounts.unshift(share);
    await run('mount', ['--make-shared', share]);
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'svcdtest', path.join(share, 'pre')]);
    hostMounts.unshift(path.join(share, 'pre'));
    await writeFile(path.join(share, 'pre', 'PRE'), 'pre\n');

    await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
    bridgeMade = true;
    await run('ip', ['link', 'set', bridge, 'up']);

    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    await waitOp(
      await api.post('/1.0/images', await readFile(img.file), { 'Content-Type': 'application/octet-stream' }),
    );
    assert.equal((await api.post('/1.0/images/aliases', { name: 'bb', target: img.fingerprint })).status, 200);
    assert.equal((await api.post('/1.0/storage-pools/default/volumes/custom', { name: 'data' })).status, 200);
  });

  after(async () => {
    const list = (await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata;
    for (const c of Array.isArray(list) ? list : []) {
      await api
        .put(`${c}/state`, { action: 'stop', force: true })
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await api
        .delete(c)
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    }
    await api?.delete('/1.0/storage-pools/default/volumes/custom/data').catch(() => {});
    await d?.stop().catch(() => {});
    if (d) {
      for (const p of await monitordFor(path.join(d.stateDir, 'containers'))) {
        try {
          process.kill(p.pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      await cleanupHostUnder(d.stateDir);
    }
    await d?.destroy();
    if (bridgeMade) await run('ip', ['link', 'del', bridge]).catch(() => {});
    for (const m of hostMounts) await run('umount', ['-l', m]).catch(() => {});
    if (work) await rm(work, { recursive: true, force: true });
    if (imgDir) await rm(imgDir, { recursive: true, force: true });
  });

  const config = {
    'limits.cpu': '1',
    'limits.memory': '128MiB',
    'limits.memory.swap': 'false',
    'limits.processes': '50',
    'limits.kernel.nofile': '1000:2000',
    'environment.SVCD_GREETING': 'hello world',
    'security.syscalls.blacklist': 'mkdir errno 1\nmkdirat errno 1',
    'user.note': 'kept',
    'boot.autostart': 'false',
  };
  const devices = {
    root: { type: 'disk', path: '/', pool: 'default' },
    data: { type: 'disk', pool: 'default', source: 'data', path: '/mnt/data' },
    ro: { type: 'disk', source: '', path: '/mnt/ro', readonly: 'true' },
    rec: { type: 'disk', source: '', path: '/mnt/rec', recursive: 'true', propagation: 'rslave' },
    priv: { type: 'disk', source: '', path: '/mnt/priv', recursive: 'true', propagation: 'private' },
    eth1: { type: 'nic', nictype: 'bridged', parent: bridge, hwaddr, mtu: '1400', host_name: vethHost },
    tun: { type: 'unix-char', path: '/dev/net/tun' },
    gone: { type: 'unix-char', source: '/dev/svcd-no-such-node', path: '/dev/gone', required: 'false' },
  };
  const body = (
    extraConfig: Record<string, string> = {},
    extraDevices: Record<string, Record<string, string>> = {},
  ) => ({
    config: { ...config, ...extraConfig },
    devices: {
      ...devices,
      ro: { ...devices.ro, source: path.join(work, 'ro') },
      rec: { ...devices.rec, source: share },
      priv: { ...devices.priv, source: share },
      ...extraDevices,
    },
  });

  test('bad keys and values are refused with 400 before anything is written', async () => {
    const create = (extra: Record<string, unknown>) =>
      api.post('/1.0/containers', { name: 'bad', source: { type: 'image', alias: 'bb' }, ...extra });
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['unknown key', { config: { 'limits.cpus': '1' } }, /limits\.cpus/],
      ['cpu count 0', { config: { 'limits.cpu': '0' } }, /limits\.cpu/],
      ['memory over 100%', { config: { 'limits.memory': '120%' } }, /limits\.memory/],
      ['unknown kernel limit', { config: { 'limits.kernel.files': '10' } }, /limits\.kernel\.files/],
      ['soft over hard', { config: { 'limits.kernel.nofile': '20:10' } }, /soft limit/],
      ['idmap size 0', { config: { 'security.idmap.size': '0' } }, /security\.idmap\.size/],
      [
        'raw.id_map ranges of different lengths',
        { config: { 'raw.id_map': 'both 1000-1009 1000-1001' } },
        /raw\.id_map/,
      ],
      [
        'whitelist and blacklist',
        { config: { 'security.syscalls.whitelist': 'read', 'security.syscalls.blacklist': 'mount' } },
        /cannot be combined/,
      ],
      ['environment line break', { config: { 'environment.X': 'a\nlxc.hook.start = /bin/false' } }, /environment\.X/],
      ['volatile key', { config: { 'volatile.eth0.hwaddr': '00:16:3e:00:00:01' } }, /read-only/],
      ['bad boot key value', { config: { 'boot.autostart': 'sometimes' } }, /boot\.autostart/],
      [
        'volume source that is a path',
        { devices: { v: { type: 'disk', pool: 'default', source: '/srv', path: '/mnt' } } },
        /custom volume/,
      ],
      ['relative host path', { devices: { v: { type: 'disk', source: 'srv', path: '/mnt' } } }, /host path/],
      [
        'bad propagation',
        { devices: { v: { type: 'disk', source: '/srv', path: '/mnt', propagation: 'both' } } },
        /propagation/,
      ],
      [
        'missing managed network',
        { devices: { n: { type: 'nic', network: 'lxdbr0' } } },
        /network "lxdbr0" does not exist/,
      ],
      ['multicast MAC', { devices: { n: { type: 'nic', parent: bridge, hwaddr: '01:00:5e:00:00:01' } } }, /unicast/],
      [
        'a key of another nictype',
        { devices: { n: { type: 'nic', nictype: 'macvlan', parent: bridge, 'limits.ingress': '1Mbit' } } },
        /limits\.ingress/,
      ],
      [
        'unix-char without a path',
        { devices: { t: { type: 'unix-char', major: '10', minor: '200' } } },
        /"path" or "source"/,
      ],
      ['unix-char bad mode', { devices: { t: { type: 'unix-char', path: '/dev/x', mode: '999' } } }, /mode/],
      ['unknown device property', { devices: { t: { type: 'unix-block', path: '/dev/x', colour: 'red' } } }, /colour/],
    ];
    for (const [what, extra, re] of cases) {
      const msg = expectError(await create(extra), 400);
      assert.match(msg, re, `${what}: ${msg}`);
    }
    assert.deepEqual((await api.get('/1.0/containers')).json.metadata, []);
    assert.deepEqual(await readdir(path.join(d.stateDir, 'containers')), []);
    assert.deepEqual((await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata, []);
  });

  let pid = 0;

  test('limits, kernel limits, environment, seccomp, a volume, host paths, a bridged NIC and a unix-char device reach LXC', async () => {
    await waitOp(await api.post('/1.0/containers', { name: 'cfg', source: { type: 'image', alias: 'bb' }, ...body() }));
    await waitOp(await api.put('/1.0/containers/cfg/state', { action: 'start' }));
    pid = await runningPid('cfg');
    const base = (await uidMap(pid))[0]![1]!;
    assert.deepEqual(await uidMap(pid), [[0, base, 65536]]);

    // cgroup v1 (or v2) limits, found through /proc/<pid>/cgroup
    assert.equal(await cgroupFile(pid, 'cpuset', 'cpuset.cpus', 'cpuset.cpus'), '0');
    assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(128 * MiB));
    assert.equal(await cgroupFile(pid, 'pids', 'pids.max', 'pids.max'), '50');
    const memsw = await cgroupFile(pid, 'memory', 'memory.memsw.limit_in_bytes', 'memory.swap.max').catch(
      () => undefined,
    );
    if (memsw !== undefined) assert.ok(memsw === String(128 * MiB) || memsw === '0', `swap off: ${memsw}`);
    const swappiness = await cgroupFile(pid, 'memory', 'memory.swappiness', 'memory.swap.max').catch(() => undefined);
    if (swappiness !== undefined) assert.equal(swappiness, '0');

    // kernel limits and environment of init
    assert.match(await readFile(`/proc/${pid}/limits`, 'utf8'), /^Max open files\s+1000\s+2000\s+files/m);
    assert.ok((await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').includes('SVCD_GREETING=hello world'));

    // seccomp: a filter is on, and it is ours (mkdir is refused with EPERM)
    assert.equal(/^Seccomp:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1], '2');
    const id = await idOf('cfg');
    const lxcRef = { name: id, lxcPath: path.join(d.stateDir, 'containers') };
    assert.match(await readFile(path.join(lxcRef.lxcPath, id, 'seccomp'), 'utf8'), /^mkdirat errno 1$/m);
    await assert.rejects(
      runInContainer({ ...lxcRef, command: ['/bin/mkdir', '/tmp/denied'] }),
      /Operation not permitted/,
    );
    assert.equal(await runInContainer({ ...lxcRef, command: ['/bin/cat', '/mnt/ro/hello'] }), 'from the host');

    // the custom volume: idmapped, so a file the host writes as root is the container root's
    const mounts = await readFile(`/proc/${pid}/mountinfo`, 'utf8');
    const dataLine = mounts.split('\n').find((l) => l.split(' ')[4] === '/mnt/data');
    assert.ok(dataLine, mounts);
    assert.match(dataLine, /idmapped/);
    const volDir = path.join(defaultPoolPath(d.stateDir, 'default'), 'custom');
    const [volId] = await readdir(volDir);
    await writeFile(path.join(volDir, volId!, 'from-host'), 'written on the host\n');
    assert.equal(await readFile(`/proc/${pid}/root/mnt/data/from-host`, 'utf8'), 'written on the host\n');
    assert.equal(
      (await stat(`/proc/${pid}/root/mnt/data/from-host`)).uid,
      base,
      'host root shows as the container root through the idmapped mount',
    );

    // host path, read-only
    assert.equal(await readFile(`/proc/${pid}/root/mnt/ro/hello`, 'utf8'), 'from the host\n');
    await assert.rejects(writeFile(`/proc/${pid}/root/mnt/ro/new`, 'x'), /EROFS/);

    // recursive: the submount made before the start comes along; a submount made after the start
    // propagates to the rslave bind only, not to the private one
    assert.equal(await readFile(`/proc/${pid}/root/mnt/rec/pre/PRE`, 'utf8'), 'pre\n');
    assert.equal(await readFile(`/proc/${pid}/root/mnt/priv/pre/PRE`, 'utf8'), 'pre\n');
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'svcdtest', path.join(share, 'late')]);
    hostMounts.unshift(path.join(share, 'late'));
    await writeFile(path.join(share, 'late', 'LATE'), 'late\n');
    await eventually(
      () => readFile(`/proc/${pid}/root/mnt/rec/late/LATE`, 'utf8').then((t) => t === 'late\n'),
      'the late submount to propagate',
    );
    assert.deepEqual(await readdir(`/proc/${pid}/root/mnt/priv/late`), []);

    // the NIC: requested name, MAC and MTU inside; host side on the bridge
    const { stdout: link } = await run('nsenter', ['-t', String(pid), '-n', 'ip', '-o', 'link', 'show', 'eth1']);
    assert.match(link, new RegExp(`link/ether ${hwaddr} `));
    assert.match(link, /mtu 1400/);
    assert.equal(path.basename(await readlink(`/sys/class/net/${vethHost}/master`)), bridge);

    // unix-char: a 10:200 char device owned by the container's root; the optional missing one is skipped
    const tun = await stat(`/proc/${pid}/root/dev/net/tun`);
    assert.ok(tun.isCharacterDevice());
    assert.equal(tun.rdev, (10 << 8) | 200);
    assert.deepEqual([tun.uid, tun.mode & 0o777], [base, 0o660]);
    // the device cgroup lets it be opened (count=0: open and close, no read)
    await runInContainer({ ...lxcRef, command: ['/bin/dd', 'if=/dev/net/tun', 'of=/dev/null', 'count=0'] });
    await assert.rejects(stat(`/proc/${pid}/root/dev/gone`), /ENOENT/);

    // config and devices as the API shows them
    const c = (await api.get('/1.0/containers/cfg')).json.metadata;
    assert.equal(c.config['user.note'], 'kept');
    assert.deepEqual(c.expanded_devices.eth1, devices.eth1);
  });

  test('host problems are refused at start with clear messages, leaving the running container as it was', async () => {
    await putFails(
      'cfg',
      body({}, { eth2: { type: 'nic', parent: `svcdnone${rand}` } }),
      new RegExp(`nic "eth2": host bridge "svcdnone${rand}" does not exist`),
    );
    await putFails(
      'cfg',
      body({}, { more: { type: 'disk', pool: 'default', source: 'nope', path: '/mnt/nope' } }),
      /disk "more": custom storage volume "nope" does not exist on pool "default"/,
    );
    await putFails(
      'cfg',
      body({}, { more: { type: 'disk', source: path.join(work, 'nope'), path: '/mnt/nope' } }),
      /disk "more": host path ".*nope" does not exist/,
    );
    await putFails(
      'cfg',
      body({}, { more: { type: 'disk', source: path.join(work, 'closed', 'inner'), path: '/mnt/nope' } }),
      /cannot reach .*closed" has mode 0700/,
    );
    await putFails(
      'cfg',
      body({}, { more: { type: 'disk', source: share, path: '/mnt/nope' } }),
      /disk "more": ".*share" has mounts below it .*recursive=true/,
    );
    await putFails(
      'cfg',
      body({}, { kvm: { type: 'unix-char', path: '/dev/svcd-no-such-node' } }),
      /unix-char "kvm": host device node "\/dev\/svcd-no-such-node" does not exist/,
    );
    if (os.cpus().length < 64)
      await putFails('cfg', body({ 'limits.cpu': '0-63' }), /limits.cpu=0-63 names CPU 63, but this host has CPUs 0-/);
    const subuid = parseSubids(await readFile('/etc/subuid', 'utf8'), 'root', 0);
    if (!subuid.some((r) => r.start <= 1000 && 1000 < r.start + r.count)) {
      await putFails(
        'cfg',
        body({ 'raw.id_map': 'both 1000 1000' }),
        /raw.id_map: host uids 1000-1000 are not delegated to root in \/etc\/subuid/,
      );
    }
    // back to a good config: converges, and the container kept running throughout
    await waitOp(await api.put('/1.0/containers/cfg', body()));
    assert.equal((await state('cfg')).pid, pid);
  });

  test('idmap keys by PUT config + restart: isolated, base and size, raw.id_map; privileged has no map and plain binds', async () => {
    const check = async (want: number[][] | ((m: number[][]) => void)) => {
      const m = await uidMap(pid);
      if (typeof want === 'function') want(m);
      else assert.deepEqual(m, want);
      // the volume and the device node follow the new map: still the container root's
      const root = m.find((r) => r[0] === 0)![1]!;
      assert.equal((await stat(`/proc/${pid}/root/mnt/data/from-host`)).uid, root);
      assert.equal((await stat(`/proc/${pid}/root/dev/net/tun`)).uid, root);
    };
    const subuid = parseSubids(await readFile('/etc/subuid', 'utf8'), 'root', 0);
    const main = subuid[0]!;

    await waitOp(await api.put('/1.0/containers/cfg', body({ 'security.idmap.isolated': 'true' })));
    pid = await restart('cfg', pid);
    await check((m) => {
      assert.equal(m.length, 1);
      const [ns, host, count] = m[0]!;
      assert.equal(ns, 0);
      assert.equal(count, 65536);
      assert.ok(
        host! >= main.start + 65536 && (host! - main.start) % 65536 === 0,
        `an isolated block after the shared one: ${host}`,
      );
    });

    const hostBase = main.start + 5 * 65536 + 123;
    await waitOp(
      await api.put(
        '/1.0/containers/cfg',
        body({ 'security.idmap.base': String(hostBase), 'security.idmap.size': '70000' }),
      ),
    );
    pid = await restart('cfg', pid);
    await check([[0, hostBase, 70000]]);

    const rawHost = main.start + main.count - 10;
    await waitOp(await api.put('/1.0/containers/cfg', body({ 'raw.id_map': `both ${rawHost} 1000` })));
    pid = await restart('cfg', pid);
    const shared = main.start;
    await check([
      [0, shared, 1000],
      [1000, rawHost, 1],
      [1001, shared + 1001, 64535],
    ]);

    await waitOp(await api.put('/1.0/containers/cfg', body({ 'security.privileged': 'true' })));
    pid = await restart('cfg', pid);
    await check([[0, 0, 4294967295]]);
    const dataLine = (await readFile(`/proc/${pid}/mountinfo`, 'utf8'))
      .split('\n')
      .find((l) => l.split(' ')[4] === '/mnt/data');
    assert.ok(dataLine && !/idmapped/.test(dataLine), dataLine);
  });
});

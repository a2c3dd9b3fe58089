/**
 * Containers driven by Debian's unmodified `lxc` CLI (5.0.2) and `lxd-benchmark` (lxd-tools 5.0.2)
 * against svcd as a process on real LXC, with the busybox test image imported by `lxc image import`.
 * Every CLI effect is also checked over REST (unix socket) and on the host (LXC configs svcd wrote,
 * `lxc-info`, /proc, cgroup files, the rootfs directories). No NIC anywhere: the default profile has
 * only a root disk, and nothing but the unix socket is ever addressed.
 *
 * `after` force-stops and deletes every container through the API (falling back to lxc-stop when the
 * API is gone), ends this state dir's lxc-monitor(d), unmounts what is left and removes the temp dirs,
 * also when a test failed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { cgroupFile } from '../support/cgroup.ts';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { lxcIdOf, teardownContainers } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { subscribeEvents } from '../support/events.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;
/** lxd-benchmark's container count (50; the whole launch + delete takes about a minute here). */
const BENCH_COUNT = 50;
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container CLI e2e tests: ${skip}`);

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );
const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
/** Non-empty stdout lines, sorted (csv output of `lxc list` / `lxc image list`). */
const lines = (out: string) =>
  out
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .sort();

/** The container's file for a v1 controller (this host) or the unified hierarchy. */
describe('containers through the real lxc CLI and lxd-benchmark', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let work = '';
  let fingerprint = '';
  let imageFile = '';
  let hostArch = '';
  const lxcPath = () => path.join(d.stateDir, 'containers');

  const state = (name: string) => api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata);
  const container = (name: string) => api.get(`/1.0/containers/${name}`).then((r) => r.json.metadata);
  /** REST: the container runs with an init pid (other than `notPid`); returns its state. */
  async function running(name: string, notPid?: number) {
    return eventually(
      async () => {
        const st = await state(name);
        return st.status === 'Running' && st.pid > 0 && st.pid !== notPid ? st : undefined;
      },
      `${name} running${notPid ? ' with a new init' : ''}`,
      30_000,
    );
  }
  /** REST: the container is gone. */
  const gone = (name: string) =>
    eventually(async () => (await api.get(`/1.0/containers/${name}`)).status === 404, `${name} to be gone`, 30_000);

  /** The LXC name (svcd's stable id) of `name`, from the rendered config's `lxc.uts.name`. */
  const idOf = (name: string) => lxcIdOf(d.stateDir, name);
  const lxcConfig = (id: string) => readFile(path.join(lxcPath(), id, 'config'), 'utf8');
  /** The rootfs directory on the host, from the LXC config svcd wrote (`lxc.rootfs.path = dir:…`). */
  async function rootfsOf(id: string): Promise<string> {
    const m = /^lxc\.rootfs\.path = (?:dir:)?(.+)$/m.exec(await lxcConfig(id));
    assert.ok(m, `no lxc.rootfs.path for ${id}`);
    return m[1]!;
  }
  /** LXC's own view of the container: RUNNING, STOPPED, FROZEN. */
  async function hostState(id: string): Promise<string> {
    const { stdout } = await run('lxc-info', ['-n', id, '-P', lxcPath(), '-s']);
    return /State:\s+(\S+)/.exec(stdout)?.[1] ?? stdout;
  }
  const hostStateIs = (id: string, want: string) =>
    eventually(async () => (await hostState(id)) === want, `LXC to report ${id} ${want}`, 30_000);
  const pidGone = (pid: number) =>
    eventually(async () => !(await exists(`/proc/${pid}`)), `pid ${pid} to exit`, 30_000);
  /** `lxc list` in csv with name and state columns, as sorted lines. */
  const listNS = async (...filters: string[]) =>
    lines(await lxc.ok(['list', ...filters, '--format', 'csv', '-c', 'ns']));

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-cli-'));
    const img = await buildBusyboxImage({ dir: work, format: 'unified', compression: 'gzip' });
    if (img.format !== 'unified') throw new Error('unexpected image format');
    fingerprint = img.fingerprint;
    imageFile = img.file;
    hostArch = img.metadata.architecture;
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    assert.match(
      await lxc.ok(['image', 'import', imageFile, '--alias', 'bb']),
      new RegExp(`Image imported with fingerprint: ${fingerprint}`),
    );
  });

  after(async () => {
    await teardownContainers(d, api, [work]);
    await lxc?.cleanup();
  });

  test('no NIC anywhere: the default profile has only the root disk', async () => {
    const prof = (await api.get('/1.0/profiles/default')).json.metadata;
    assert.deepEqual(Object.keys(prof.devices), ['root']);
    assert.equal(prof.devices.root.type, 'disk');
    assert.deepEqual(parseYaml(await lxc.ok(['profile', 'show', 'default'])).devices, prof.devices);
  });

  test('lxc image import --alias, image list, image alias list, image export (byte-identical)', async () => {
    assert.equal((await api.get('/1.0/images/aliases/bb')).json.metadata.target, fingerprint);
    const img = (await api.get(`/1.0/images/${fingerprint}`)).json.metadata;
    assert.deepEqual(
      img.aliases.map((a: { name: string }) => a.name),
      ['bb'],
    );
    const short = fingerprint.slice(0, 12);
    const csv = lines(await lxc.ok(['image', 'list', '--format', 'csv', '-c', 'lfpa']));
    assert.deepEqual(csv, [`bb,${short},no,${hostArch}`]);
    assert.match(await lxc.ok(['image', 'list']), new RegExp(`\\|\\s*bb\\s*\\|\\s*${short}\\s*\\|`));
    assert.deepEqual(
      JSON.parse(await lxc.ok(['image', 'list', '--format', 'json'])).map(
        (i: { fingerprint: string }) => i.fingerprint,
      ),
      [fingerprint],
    );
    assert.deepEqual(lines(await lxc.ok(['image', 'alias', 'list', '--format', 'csv'])), [`bb,${short},CONTAINER,`]);
    assert.match(await lxc.ok(['image', 'alias', 'list']), /\|\s*bb\s*\|/);
    // Into a directory the file is named by Content-Disposition (the uploaded file name).
    const out = path.join(work, 'export');
    await mkdir(out);
    await lxc.ok(['image', 'export', 'bb', out, '--quiet']);
    assert.deepEqual(await readdir(out), [path.basename(imageFile)]);
    const exported = path.join(out, path.basename(imageFile));
    assert.equal(await sha256(exported), fingerprint);
    assert.ok((await readFile(exported)).equals(await readFile(imageFile)));
  });

  test('lxc launch bb c1 and lxc init bb idle; lxc list in csv and table, status=running, by name; lxc delete of a stopped one', async () => {
    const out = await lxc.ok(['launch', 'bb', 'c1']);
    assert.match(out, /Creating c1/);
    assert.match(out, /Starting c1/);
    const st = await running('c1');
    const id = await idOf('c1');
    assert.equal(await hostState(id), 'RUNNING');
    assert.match(await readFile(`/proc/${st.pid}/cgroup`, 'utf8'), new RegExp(`lxc\\.payload\\.${id}`));
    assert.deepEqual(
      Object.keys(st.network ?? {}).filter((n) => n !== 'lo'),
      [],
      'no NIC but loopback',
    );

    assert.match(await lxc.ok(['init', 'bb', 'idle']), /Creating idle/);
    assert.equal((await container('idle')).status, 'Stopped');
    const idleId = await idOf('idle');
    assert.equal(await hostState(idleId), 'STOPPED');

    assert.deepEqual(await listNS(), ['c1,RUNNING', 'idle,STOPPED']);
    const full = lines(await lxc.ok(['list', '--format', 'csv']));
    assert.match(full[0]!, /^c1,RUNNING,.*,CONTAINER,0$/);
    const table = await lxc.ok(['list']);
    assert.match(table, /\|\s*NAME\s*\|\s*STATE\s*\|/);
    assert.match(table, /\|\s*c1\s*\|\s*RUNNING\s*\|/);
    assert.match(table, /\|\s*idle\s*\|\s*STOPPED\s*\|/);
    assert.deepEqual(await listNS('status=running'), ['c1,RUNNING']);
    const filtered = (await api.get(`/1.0/containers?recursion=1&filter=${encodeURIComponent('status eq running')}`))
      .json.metadata;
    assert.deepEqual(
      filtered.map((c: { name: string }) => c.name),
      ['c1'],
    );
    assert.deepEqual(await listNS('c1'), ['c1,RUNNING']);
    assert.deepEqual(JSON.parse(await lxc.ok(['list', 'c1', '--format', 'json']))[0].state.pid, st.pid);

    // A stopped container is deleted without --force; its LXC config and rootfs go with it.
    const idleRootfs = await rootfsOf(idleId);
    await lxc.ok(['delete', 'idle']);
    expectError(await api.get('/1.0/containers/idle'), 404);
    await eventually(
      async () => !(await exists(path.join(lxcPath(), idleId))) && !(await exists(idleRootfs)),
      "idle's LXC dir and rootfs to be removed",
      30_000,
    );
  });

  test('lxc info c1: status, PID, processes and the resources section match the API', async () => {
    const st = await running('c1');
    const info = await lxc.ok(['info', 'c1']);
    assert.match(info, /^Name: c1$/m);
    assert.match(info, /^Status: RUNNING$/m);
    assert.match(info, /^Type: container$/m);
    assert.match(info, new RegExp(`^Architecture: ${hostArch}$`, 'm'));
    assert.equal(Number(/^PID: (\d+)$/m.exec(info)?.[1]), st.pid);
    assert.match(info, /^Resources:$/m);
    const processes = Number(/^\s+Processes: (\d+)$/m.exec(info)?.[1]);
    assert.ok(processes >= 1, info);
    assert.ok(st.processes >= 1);
    assert.match(info, /^\s+CPU usage:$/m);
    assert.match(info, /^\s+Memory usage:$/m);
    assert.match(info, /^\s+Memory \(current\): \S+/m);
    // The processes are really in the container's cgroup on the host.
    const procs = (await cgroupFile(st.pid, 'pids', 'cgroup.procs', 'cgroup.procs'))
      .split('\n')
      .filter(Boolean)
      .map(Number);
    assert.ok(procs.includes(st.pid), `init ${st.pid} is in the container's cgroup (${procs.join(' ')})`);
  });

  test('lxc stop / start / restart (new init) / pause (FROZEN) / start (unfreeze)', async () => {
    const id = await idOf('c1');
    const first = (await running('c1')).pid;
    await lxc.ok(['stop', 'c1']);
    await eventually(async () => (await state('c1')).status === 'Stopped', 'c1 stopped over REST', 30_000);
    await hostStateIs(id, 'STOPPED');
    await pidGone(first);
    assert.deepEqual(await listNS(), ['c1,STOPPED']);

    await lxc.ok(['start', 'c1']);
    const started = (await running('c1', first)).pid;
    await hostStateIs(id, 'RUNNING');
    assert.deepEqual(await listNS(), ['c1,RUNNING']);

    await lxc.ok(['restart', 'c1']);
    const restarted = (await running('c1', started)).pid;
    await pidGone(started);
    await hostStateIs(id, 'RUNNING');
    assert.equal(Number(/^PID: (\d+)$/m.exec(await lxc.ok(['info', 'c1']))?.[1]), restarted);

    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      await lxc.ok(['pause', 'c1']);
      await eventually(async () => (await state('c1')).status === 'Frozen', 'c1 frozen over REST', 30_000);
      await hostStateIs(id, 'FROZEN');
      assert.deepEqual(await listNS(), ['c1,FROZEN']);
      assert.match(await lxc.ok(['info', 'c1']), /^Status: FROZEN$/m);

      // `lxc start` on a frozen container sends unfreeze: the same init runs on.
      await lxc.ok(['start', 'c1']);
      await eventually(async () => (await state('c1')).status === 'Running', 'c1 thawed over REST', 30_000);
      await hostStateIs(id, 'RUNNING');
      assert.equal((await state('c1')).pid, restarted);
      assert.deepEqual(await listNS(), ['c1,RUNNING']);
      const mine = () =>
        sub.events.filter((e) => e.metadata?.source === '/1.0/containers/c1').map((e) => e.metadata.action);
      await eventually(() => mine().length >= 2, 'the paused and resumed lifecycle events');
      assert.deepEqual(mine(), ['container-paused', 'container-resumed']);
    } finally {
      sub.close();
    }
  });

  test("lxc config set / get / unset limits.memory (in the LXC config, in the cgroup after a restart); a bogus key fails with the daemon's message; config show", async () => {
    const id = await idOf('c1');
    const memLine = (bytes: number) => new RegExp(`^lxc\\.cgroup2?\\.memory\\.(limit_in_bytes|max) = ${bytes}$`, 'm');
    await lxc.ok(['config', 'set', 'c1', 'limits.memory', '128MiB']);
    assert.equal((await container('c1')).config['limits.memory'], '128MiB');
    assert.equal(await lxc.ok(['config', 'get', 'c1', 'limits.memory']), '128MiB\n');
    await eventually(
      async () => memLine(128 * MiB).test(await lxcConfig(id)),
      'the memory limit in the LXC config',
      30_000,
    );
    // It takes effect at the next start.
    const before = (await running('c1')).pid;
    await lxc.ok(['restart', 'c1']);
    const pid = (await running('c1', before)).pid;
    assert.equal(await cgroupFile(pid, 'memory', 'memory.limit_in_bytes', 'memory.max'), String(128 * MiB));

    await lxc.ok(['config', 'unset', 'c1', 'limits.memory']);
    assert.equal((await container('c1')).config['limits.memory'], undefined);
    assert.equal(await lxc.ok(['config', 'get', 'c1', 'limits.memory']), '\n');
    await eventually(
      async () => !/memory\.(limit_in_bytes|max) =/.test(await lxcConfig(id)),
      'the memory limit gone from the LXC config',
      30_000,
    );

    // The CLI shows the daemon's own message for a key it does not know.
    const message = expectError(await api.patch('/1.0/containers/c1', { config: { 'limits.bogus': '1' } }), 400);
    assert.match(message, /limits\.bogus/);
    const stderr = await lxc.fail(['config', 'set', 'c1', 'limits.bogus', '1']);
    assert.ok(stderr.includes(message), `stderr ${JSON.stringify(stderr)} carries ${JSON.stringify(message)}`);
    assert.equal((await container('c1')).config['limits.bogus'], undefined);

    const shown = parseYaml(await lxc.ok(['config', 'show', 'c1']));
    const c1 = await container('c1');
    assert.deepEqual(shown, {
      architecture: c1.architecture,
      config: c1.config,
      devices: c1.devices,
      ephemeral: false,
      profiles: ['default'],
      stateful: false,
      description: c1.description,
    });
    assert.deepEqual(parseYaml(await lxc.ok(['config', 'show', 'c1', '--expanded'])).devices, c1.expanded_devices);
  });

  test('lxc config edit c1 < yaml: description and config land, the architecture is kept; a bad key on stdin is refused', async () => {
    const id = await idOf('c1');
    const yaml = [
      'description: edited from stdin',
      'config:',
      '  limits.memory: 256MiB',
      '  user.note: from-edit',
      'devices: {}',
      'profiles:',
      '- default',
      '',
    ].join('\n');
    await lxc.ok(['config', 'edit', 'c1'], yaml);
    const c1 = await container('c1');
    assert.equal(c1.description, 'edited from stdin');
    assert.deepEqual(c1.config, { 'limits.memory': '256MiB', 'user.note': 'from-edit' });
    assert.equal(c1.architecture, hostArch, 'YAML without architecture keeps the current one (as LXD does)');
    await eventually(
      async () => /memory\.(limit_in_bytes|max) = 268435456$/m.test(await lxcConfig(id)),
      'the edited memory limit in the LXC config',
      30_000,
    );
    assert.match(await lxc.ok(['config', 'show', 'c1']), /^description: edited from stdin$/m);

    const stderr = await lxc.fail(['config', 'edit', 'c1'], 'config:\n  limits.bogus: "1"\nprofiles:\n- default\n');
    assert.match(stderr, /limits\.bogus/);
    assert.deepEqual((await container('c1')).config, { 'limits.memory': '256MiB', 'user.note': 'from-edit' });
  });

  test('lxc launch bb c2 --ephemeral, then lxc stop c2: it is gone (API, LXC dir, rootfs)', async () => {
    await lxc.ok(['launch', 'bb', 'c2', '--ephemeral']);
    assert.equal((await container('c2')).ephemeral, true);
    const pid = (await running('c2')).pid;
    const id = await idOf('c2');
    const rootfs = await rootfsOf(id);
    assert.equal(await hostState(id), 'RUNNING');
    await lxc.ok(['stop', 'c2']);
    await gone('c2');
    await pidGone(pid);
    await eventually(
      async () => !(await exists(path.join(lxcPath(), id))) && !(await exists(rootfs)),
      "c2's LXC dir and rootfs to be removed",
      30_000,
    );
    assert.deepEqual(await listNS(), ['c1,RUNNING']);
  });

  test('lxc copy c1 c3 (running source), lxc rename c3 c4: same config and files, own rootfs, same LXC id after the rename', async () => {
    const c1Id = await idOf('c1');
    await writeFile(path.join(await rootfsOf(c1Id), 'root', 'marker'), 'copied along\n');
    await lxc.ok(['copy', 'c1', 'c3']);
    const c3 = await container('c3');
    assert.equal(c3.status, 'Stopped');
    assert.deepEqual(c3.config, (await container('c1')).config);
    assert.equal(c3.description, 'edited from stdin');
    const c3Id = await idOf('c3');
    assert.notEqual(c3Id, c1Id);
    const c3Rootfs = await rootfsOf(c3Id);
    assert.notEqual(c3Rootfs, await rootfsOf(c1Id));
    assert.equal(await readFile(path.join(c3Rootfs, 'root', 'marker'), 'utf8'), 'copied along\n');
    assert.ok(await exists(path.join(c3Rootfs, 'bin', 'busybox')));
    assert.deepEqual(await listNS(), ['c1,RUNNING', 'c3,STOPPED']);

    await lxc.ok(['rename', 'c3', 'c4']);
    expectError(await api.get('/1.0/containers/c3'), 404);
    assert.deepEqual((await container('c4')).config, c3.config);
    await eventually(
      async () => (await idOf('c4').catch(() => '')) === c3Id,
      "c4's LXC config (same id) to carry the new name",
      30_000,
    );
    const vols = (await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata;
    assert.deepEqual([...vols].sort(), [
      '/1.0/storage-pools/default/volumes/container/c1',
      '/1.0/storage-pools/default/volumes/container/c4',
    ]);
    assert.deepEqual(await listNS(), ['c1,RUNNING', 'c4,STOPPED']);
  });

  test('lxc delete c1 is refused while it runs; lxc delete -f c1 stops and deletes it', async () => {
    const id = await idOf('c1');
    const pid = (await running('c1')).pid;
    assert.match(await lxc.fail(['delete', 'c1']), /running/i);
    assert.equal((await state('c1')).pid, pid, 'still running after the refusal');
    await lxc.ok(['delete', '-f', 'c1']);
    await gone('c1');
    await pidGone(pid);
    await eventually(async () => !(await exists(path.join(lxcPath(), id))), "c1's LXC dir to be removed", 30_000);
    assert.deepEqual(await listNS(), ['c4,STOPPED']);
  });

  test('lxc publish c4 --alias pub (stopped), lxc launch pub c5: the published files run', async () => {
    const out = await lxc.ok(['publish', 'c4', '--alias', 'pub']);
    const fp = /Instance published with fingerprint: ([0-9a-f]{64})/.exec(out)?.[1];
    assert.ok(fp, out);
    assert.equal((await api.get('/1.0/images/aliases/pub')).json.metadata.target, fp);
    const img = (await api.get(`/1.0/images/${fp}`)).json.metadata;
    assert.equal(img.architecture, hostArch);
    assert.deepEqual(lines(await lxc.ok(['image', 'list', '--format', 'csv', '-c', 'lf'])), [
      `bb,${fingerprint.slice(0, 12)}`,
      `pub,${fp.slice(0, 12)}`,
    ]);
    const out2 = path.join(work, 'export-pub');
    await mkdir(out2);
    await lxc.ok(['image', 'export', 'pub', out2, '--quiet']);
    const [file] = await readdir(out2);
    assert.equal(await sha256(path.join(out2, file!)), fp);

    await lxc.ok(['launch', 'pub', 'c5']);
    const st = await running('c5');
    assert.equal(await hostState(await idOf('c5')), 'RUNNING');
    assert.equal(await readFile(`/proc/${st.pid}/root/root/marker`, 'utf8'), 'copied along\n');
    assert.deepEqual(await listNS(), ['c4,STOPPED', 'c5,RUNNING']);

    await lxc.ok(['delete', '-f', 'c5', 'c4']);
    await gone('c5');
    await gone('c4');
    await pidGone(st.pid);
    await lxc.ok(['image', 'delete', 'pub']);
    await eventually(
      async () => (await api.get(`/1.0/images/${fp}`)).status === 404,
      'the published image to be deleted',
      30_000,
    );
    assert.deepEqual(await listNS(), []);
  });

  test(`lxd-benchmark launch --count ${BENCH_COUNT} bb, then lxd-benchmark delete`, async () => {
    const env = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: lxc.conf,
      LXD_DIR: d.stateDir,
      LXD_CONF: lxc.conf,
    };
    const bench = (args: string[]) =>
      run('lxd-benchmark', args, { env, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
    const names = Array.from({ length: BENCH_COUNT }, (_, i) => `benchmark-${String(i + 1).padStart(2, '0')}`);
    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      const t0 = Date.now();
      const launched = await bench(['launch', '--count', String(BENCH_COUNT), 'bb']);
      console.log(`# lxd-benchmark launch --count ${BENCH_COUNT}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      assert.match(launched.stdout, new RegExp(`Container count: ${BENCH_COUNT}`));
      assert.match(launched.stdout, new RegExp(`Found image in local store: ${fingerprint}`));
      assert.match(launched.stdout, /Batch processing completed/);

      // REST: all of them exist, marked as the benchmark's, and run with an init.
      const listed = (await api.get('/1.0/containers?recursion=2')).json.metadata as any[];
      assert.deepEqual(listed.map((c) => c.name).sort(), names);
      for (const c of listed) {
        assert.equal(c.config['user.lxd-benchmark'], 'true', c.name);
        assert.equal(c.state.status, 'Running', c.name);
        assert.ok(c.state.pid > 0, c.name);
      }
      // Host: LXC runs exactly these, and each init is alive.
      const ids = await Promise.all(names.map(idOf));
      const { stdout } = await run('lxc-ls', ['-P', lxcPath(), '--running', '-1']);
      assert.deepEqual(stdout.split(/\s+/).filter(Boolean).sort(), [...ids].sort());
      for (const c of listed) assert.ok(await exists(`/proc/${c.state.pid}`), c.name);
      assert.deepEqual(lines(await lxc.ok(['list', 'status=running', '--format', 'csv', '-c', 'n'])), names);
      const sources = (action: string) =>
        new Set(sub.events.filter((e) => e.metadata?.action === action).map((e) => e.metadata.source));
      assert.equal(sources('container-created').size, BENCH_COUNT);
      assert.equal(sources('container-started').size, BENCH_COUNT);

      const t1 = Date.now();
      const deleted = await bench(['delete']);
      console.log(`# lxd-benchmark delete: ${((Date.now() - t1) / 1000).toFixed(1)} s`);
      assert.match(deleted.stdout, new RegExp(`Deleting ${BENCH_COUNT} containers`));
      assert.deepEqual((await api.get('/1.0/containers')).json.metadata, []);
      assert.deepEqual((await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata, []);
      for (const c of listed) await pidGone(c.state.pid);
      assert.deepEqual((await run('lxc-ls', ['-P', lxcPath(), '-1'])).stdout.trim(), '');
      await eventually(
        async () => (await readdir(lxcPath())).length === 0,
        'every LXC container dir to be removed',
        30_000,
      );
      await eventually(
        () => sources('container-deleted').size === BENCH_COUNT,
        'a deleted event per benchmark container',
      );
    } finally {
      sub.close();
    }
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, request, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';

const run = promisify(execFile);

describe('backups carry snapshots: export, delete, import (API and lxc CLI), container_only, unsafe tarballs', () => {
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;
  const fileUrl = (name: string, p: string) => `/1.0/containers/${name}/files?path=${encodeURIComponent(p)}`;
  const writeNote = async (name: string, text: string) =>
    assert.equal(
      (await api.post(fileUrl(name, '/root/note'), text, { 'Content-Type': 'application/octet-stream' })).status,
      200,
    );
  const readNote = async (name: string) => {
    const r = await api.get(fileUrl(name, '/root/note'));
    assert.equal(r.status, 200, r.text);
    return r.text;
  };
  const exportBackup = async (name: string, backup: string, body: Record<string, unknown>) => {
    await waitOp(api, await api.post(`/1.0/containers/${name}/backups`, { name: backup, ...body }));
    const res = await request({ socketPath: d.socketPath }, 'GET', `/1.0/containers/${name}/backups/${backup}/export`);
    assert.equal(res.status, 200);
    const file = path.join(work, `${name}-${backup}.tar.gz`);
    await writeFile(file, res.body!);
    return file;
  };
  const listing = async (file: string) =>
    (await run('tar', ['-tzf', file], { maxBuffer: 64 * 1024 * 1024 })).stdout.split('\n');
  const member = async (file: string, m: string) => parse((await run('tar', ['-xzOf', file, m])).stdout);
  const importTarball = (file: Buffer, headers: Record<string, string> = {}) =>
    api.post('/1.0/containers', file, { 'Content-Type': 'application/octet-stream', ...headers });
  const containers = async () => (await api.get('/1.0/containers')).json.metadata as string[];
  const imports = async () =>
    (await readdir(path.join(d.stateDir, 'backups', 'imports')).catch(() => [] as string[])).filter(
      (f) => !f.startsWith('.'),
    );
  const volumes = async () => ((await api.get('/1.0/storage-pools/default/volumes')).json.metadata as string[]).sort();

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-bksnap-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    await uploadBusybox(api, work);
  });
  after(async () => {
    await cli?.cleanup();
    await teardownContainers(d, api, [work]);
  });

  test('export packs every snapshot in LXD layout; import restores them with config and dates; restore s1 brings its file back', async () => {
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'bks',
        config: { 'user.phase': 'one' },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await writeNote('bks', 'first');
    await waitOp(api, await api.post('/1.0/containers/bks/snapshots', { name: 's1' }));
    assert.equal((await api.patch('/1.0/containers/bks', { config: { 'user.phase': 'two' } })).status, 200);
    await writeNote('bks', 'second');
    await waitOp(api, await api.post('/1.0/containers/bks/snapshots', { name: 's2' }));
    await writeNote('bks', 'live');
    const before = (await api.get('/1.0/containers/bks/snapshots?recursion=1')).json.metadata as {
      name: string;
      created_at: string;
      config: Record<string, string>;
    }[];
    assert.deepEqual(
      before.map((s) => [s.name, s.config['user.phase']]),
      [
        ['s1', 'one'],
        ['s2', 'two'],
      ],
    );

    const full = await exportBackup('bks', 'full', {});
    const names = await listing(full);
    for (const m of [
      'backup/index.yaml',
      'backup/container/backup.yaml',
      'backup/container/rootfs/root/note',
      'backup/snapshots/s1/rootfs/root/note',
      'backup/snapshots/s1/metadata.yaml',
      'backup/snapshots/s2/rootfs/root/note',
      'backup/snapshots/s2/templates/',
    ])
      assert.ok(names.includes(m), `${m} is in the tarball`);
    assert.equal((await run('tar', ['-xzOf', full, 'backup/snapshots/s1/rootfs/root/note'])).stdout, 'first');
    const index = await member(full, 'backup/index.yaml');
    assert.deepEqual(index.snapshots, ['s1', 's2']);
    assert.equal(index.type, 'container');
    assert.equal(index.optimized, false);
    const backupYaml = await member(full, 'backup/container/backup.yaml');
    assert.equal(backupYaml.container.name, 'bks');
    assert.deepEqual(
      backupYaml.snapshots.map((s: { name: string; config: Record<string, string>; created_at: string }) => [
        s.name,
        s.config['user.phase'],
        s.created_at,
      ]),
      before.map((s) => [s.name, s.config['user.phase'], s.created_at]),
    );

    const only = await exportBackup('bks', 'only', { container_only: true });
    assert.equal(
      (await listing(only)).filter((m) => m.startsWith('backup/snapshots')).length,
      0,
      'container_only packs no snapshot',
    );
    assert.equal((await member(only, 'backup/index.yaml')).snapshots, undefined);

    await waitOp(api, await api.delete('/1.0/containers/bks'));
    await waitOp(api, await importTarball(await readFile(full)));
    const after = (await api.get('/1.0/containers/bks/snapshots?recursion=1')).json.metadata as typeof before;
    assert.deepEqual(
      after.map((s) => [s.name, s.created_at, s.config['user.phase']]),
      before.map((s) => [s.name, s.created_at, s.config['user.phase']]),
    );
    assert.equal((await api.get('/1.0/containers/bks')).json.metadata.config['user.phase'], 'two');
    assert.equal(await readNote('bks'), 'live');
    assert.deepEqual(await imports(), [], 'the uploaded tarball is gone once unpacked');

    // Real snapshots on the pool: restoring each brings back its files and config.
    await waitOp(
      api,
      await api.put('/1.0/containers/bks', { restore: 'bks/s1', config: null, devices: null, profiles: null }),
    );
    assert.equal(await readNote('bks'), 'first');
    assert.equal((await api.get('/1.0/containers/bks')).json.metadata.config['user.phase'], 'one');
    await waitOp(api, await api.put('/1.0/containers/bks', { restore: 's2' }));
    assert.equal(await readNote('bks'), 'second');

    // The container_only backup restores under another name, without snapshots.
    await waitOp(api, await importTarball(await readFile(only), { 'X-LXD-name': 'bksonly' }));
    assert.deepEqual((await api.get('/1.0/containers/bksonly/snapshots')).json.metadata, []);
    assert.equal(await readNote('bksonly'), 'live');
  });

  test("an LXD-style tarball (config only in backup/container/backup.yaml, '<container>/<snapshot>' names) imports with its snapshots", async () => {
    const full = path.join(work, 'bks-full.tar.gz');
    const dir = path.join(work, 'lxdstyle');
    await mkdir(dir);
    await run('tar', ['-xzf', full, '-C', dir, '--numeric-owner']);
    const index = parse(await readFile(path.join(dir, 'backup/index.yaml'), 'utf8'));
    delete index.config;
    index.name = 'lxdstyle';
    await writeFile(path.join(dir, 'backup/index.yaml'), stringify(index));
    const by = parse(await readFile(path.join(dir, 'backup/container/backup.yaml'), 'utf8'));
    for (const s of by.snapshots) s.name = `bks/${s.name}`;
    await writeFile(path.join(dir, 'backup/container/backup.yaml'), stringify(by));
    const out = path.join(work, 'lxdstyle.tar.gz');
    await run('tar', ['-czf', out, '-C', dir, '--numeric-owner', 'backup']);
    await waitOp(api, await importTarball(await readFile(out)));
    const snaps = (await api.get('/1.0/containers/lxdstyle/snapshots?recursion=1')).json.metadata as {
      name: string;
      config: Record<string, string>;
    }[];
    assert.deepEqual(
      snaps.map((s) => [s.name, s.config['user.phase']]),
      [
        ['s1', 'one'],
        ['s2', 'two'],
      ],
    );
    await waitOp(api, await api.put('/1.0/containers/lxdstyle', { restore: 's1' }));
    assert.equal(await readNote('lxdstyle'), 'first');
  });

  test('unsafe or broken tarballs are refused with a 400 and leave no container, volume or file behind', async () => {
    const beforeContainers = await containers();
    const beforeVolumes = await volumes();
    // A symlink to a host directory, then a member written through it (appended, as GNU tar allows).
    const target = path.join(work, 'host-target');
    await mkdir(target);
    const a = path.join(work, 'trick-a');
    const b = path.join(work, 'trick-b');
    await mkdir(path.join(a, 'backup/container/rootfs'), { recursive: true });
    await writeFile(
      path.join(a, 'backup/index.yaml'),
      stringify({
        name: 'tricked',
        backend: 'dir',
        pool: 'default',
        type: 'container',
        config: { container: { name: 'tricked', profiles: ['default'], config: {}, devices: {} } },
      }),
    );
    await symlink(target, path.join(a, 'backup/container/rootfs/evil'));
    await mkdir(path.join(b, 'backup/container/rootfs/evil'), { recursive: true });
    await writeFile(path.join(b, 'backup/container/rootfs/evil/pwned'), 'x');
    const trick = path.join(work, 'trick.tar');
    await run('tar', ['-cf', trick, '-C', a, 'backup']);
    await run('tar', ['-rf', trick, '-C', b, 'backup/container/rootfs/evil/pwned']);
    assert.match(
      expectError(await importTarball(await readFile(trick)), 400),
      /Invalid backup: .*evil.*not a directory/,
    );
    assert.deepEqual(await readdir(target), [], 'nothing was written through the symlink');

    // A truncated export, and an index listing a snapshot the tarball lacks.
    const whole = await readFile(path.join(work, 'bks-full.tar.gz'));
    assert.match(
      expectError(await importTarball(whole.subarray(0, Math.floor(whole.length / 2)), { 'X-LXD-name': 'cut' }), 400),
      /corrupt or truncated/,
    );
    const dir = path.join(work, 'missing-snap');
    await mkdir(dir);
    await run('tar', ['-xzf', path.join(work, 'bks-full.tar.gz'), '-C', dir, '--numeric-owner']);
    await rm(path.join(dir, 'backup/snapshots/s2'), { recursive: true });
    const missing = path.join(work, 'missing-snap.tar.gz');
    await run('tar', ['-czf', missing, '-C', dir, '--numeric-owner', 'backup']);
    assert.match(
      expectError(await importTarball(await readFile(missing), { 'X-LXD-name': 'missing' }), 400),
      /snapshot "s2" is listed .*missing/,
    );

    assert.deepEqual(await containers(), beforeContainers);
    assert.deepEqual(await volumes(), beforeVolumes);
    assert.deepEqual(await imports(), []);
  });

  test('on a btrfs pool: snapshots exported from subvolumes and imported as subvolume snapshots (X-LXD-pool)', async () => {
    assert.equal(
      (await api.post('/1.0/storage-pools', { name: 'bkbt', driver: 'btrfs', config: { size: '384MiB' } })).status,
      200,
    );
    try {
      await waitOp(
        api,
        await api.post('/1.0/containers', {
          name: 'bkbtc',
          devices: { root: { type: 'disk', path: '/', pool: 'bkbt' } },
          source: { type: 'image', alias: 'bb' },
        }),
      );
      await writeNote('bkbtc', 'bt-one');
      await waitOp(api, await api.post('/1.0/containers/bkbtc/snapshots', { name: 'b1' }));
      await writeNote('bkbtc', 'bt-live');
      const file = await exportBackup('bkbtc', 'bt', {});
      assert.equal((await member(file, 'backup/index.yaml')).backend, 'btrfs');
      assert.ok((await listing(file)).includes('backup/snapshots/b1/rootfs/root/note'));
      await waitOp(api, await api.delete('/1.0/containers/bkbtc'));
      await waitOp(api, await importTarball(await readFile(file), { 'X-LXD-pool': 'bkbt' }));
      const c = (await api.get('/1.0/containers/bkbtc')).json.metadata;
      assert.equal(c.expanded_devices.root.pool, 'bkbt');
      const s = (await api.get('/1.0/containers/bkbtc/snapshots/b1')).json.metadata;
      assert.equal(s.devices.root.pool, 'bkbt');
      assert.equal(await readNote('bkbtc'), 'bt-live');
      await waitOp(api, await api.put('/1.0/containers/bkbtc', { restore: 'b1' }));
      assert.equal(await readNote('bkbtc'), 'bt-one');
    } finally {
      await api
        .delete('/1.0/containers/bkbtc')
        .then((r) => (r.status === 202 ? api.get(`${r.json.operation}/wait?timeout=60`) : undefined))
        .catch(() => {});
      await api.delete('/1.0/storage-pools/bkbt').catch(() => {});
    }
  });

  test('lxc export / delete / import with the real CLI keeps the snapshots (lxc info), and lxc restore works', async () => {
    await waitOp(api, await api.post('/1.0/containers', { name: 'clisnap', source: { type: 'image', alias: 'bb' } }));
    await writeNote('clisnap', 'cli-one');
    await cli.ok(['snapshot', 'clisnap', 'first']);
    await writeNote('clisnap', 'cli-two');
    await cli.ok(['snapshot', 'clisnap', 'second']);
    const out = path.join(work, 'clisnap.tar.gz');
    await cli.ok(['export', 'clisnap', out]);
    assert.ok((await stat(out)).size > 0);
    const names = await listing(out);
    assert.ok(
      names.includes('backup/snapshots/first/rootfs/root/note') &&
        names.includes('backup/snapshots/second/rootfs/root/note'),
    );
    await cli.ok(['delete', 'clisnap']);
    await cli.ok(['import', out]);
    const info = await cli.ok(['info', 'clisnap']);
    assert.match(info, /Snapshots:/);
    assert.match(info, /\bfirst\b/);
    assert.match(info, /\bsecond\b/);
    await cli.ok(['restore', 'clisnap', 'first']);
    assert.equal(await readNote('clisnap'), 'cli-one');
    // --instance-only: no snapshots.
    const bare = path.join(work, 'clisnap-bare.tar.gz');
    await cli.ok(['export', 'clisnap', bare, '--instance-only']);
    assert.equal((await listing(bare)).filter((m) => m.startsWith('backup/snapshots')).length, 0);
  });
});

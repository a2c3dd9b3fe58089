import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';

describe('container snapshots on btrfs: create, restore, copy and publish from a snapshot, rename, delete', () => {
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;
  const pidOf = async (name: string) =>
    eventually(async () => {
      const s = (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
      return s.status === 'Running' && s.pid > 0 ? (s.pid as number) : undefined;
    }, `${name} running`);
  const note = async (name: string) => readFile(`/proc/${await pidOf(name)}/root/root/note`, 'utf8');

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-snap-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    await uploadBusybox(api, work);
    assert.equal(
      (await api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '384MiB' } })).status,
      200,
    );
    // Privileged, so the test can write into it through /proc/<pid>/root (host root is unmapped in an idmapped rootfs).
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'c',
        config: { 'security.privileged': 'true' },
        devices: { root: { type: 'disk', path: '/', pool: 'bt' } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(api, await api.put('/1.0/containers/c/state', { action: 'start' }));
  });
  after(async () => {
    await cli?.cleanup();
    const list = (await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata;
    for (const c of Array.isArray(list) ? list : [])
      await api
        .delete(c)
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    await api?.delete('/1.0/storage-pools/bt').catch(() => {});
    await teardownContainers(d, api, [work]);
  });

  test('snapshot (async), then restore as lxc sends it: the running container comes back with the old files', async () => {
    await writeFile(`/proc/${await pidOf('c')}/root/root/note`, 'first');
    expectError(await api.post('/1.0/containers/c/snapshots', { name: 's1', stateful: true }), 400);
    const op = await waitOp(api, await api.post('/1.0/containers/c/snapshots', { name: 's1' }));
    assert.deepEqual(op.resources.containers, ['/1.0/containers/c']);
    expectError(await api.post('/1.0/containers/c/snapshots', { name: 's1' }), 409);
    assert.deepEqual((await api.get('/1.0/containers/c/snapshots')).json.metadata, ['/1.0/containers/c/snapshots/s1']);
    const s = (await api.get('/1.0/containers/c/snapshots/s1')).json.metadata;
    assert.equal(s.name, 's1');
    assert.equal(s.stateful, false);
    await writeFile(`/proc/${await pidOf('c')}/root/root/note`, 'second');
    const before = await pidOf('c');
    await waitOp(
      api,
      await api.put('/1.0/containers/c', { restore: 'c/s1', config: null, devices: null, profiles: null }),
    );
    await eventually(async () => (await pidOf('c')) !== before, 'the container restarted after the restore');
    assert.equal(await note('c'), 'first');
    const full = (await api.get('/1.0/containers?recursion=2')).json.metadata.find(
      (x: { name: string }) => x.name === 'c',
    );
    assert.deepEqual(
      full.snapshots.map((x: { name: string }) => x.name),
      ['s1'],
    );
    expectError(await api.put('/1.0/containers/c', { restore: 'other/s1' }), 400);
    expectError(await api.put('/1.0/containers/c', { restore: 'nope' }), 404);
  });

  test('copy from a snapshot, and publish a snapshot as an image', async () => {
    await writeFile(`/proc/${await pidOf('c')}/root/root/note`, 'third');
    await waitOp(
      api,
      await api.post('/1.0/containers', { name: 'fromsnap', source: { type: 'copy', source: 'c/s1' } }),
    );
    await waitOp(api, await api.put('/1.0/containers/fromsnap/state', { action: 'start' }));
    assert.equal(await note('fromsnap'), 'first');
    expectError(await api.post('/1.0/containers', { name: 'x', source: { type: 'copy', source: 'c/nope' } }), 404);
    const op = await waitOp(
      api,
      await api.post('/1.0/images', { source: { type: 'snapshot', name: 'c/s1' }, aliases: [{ name: 'snapimg' }] }),
    );
    assert.match(op.metadata.fingerprint, /^[0-9a-f]{64}$/);
  });

  test('rename and delete snapshots (async); the lxc CLI snapshot / restore / info', async () => {
    await waitOp(api, await api.post('/1.0/containers/c/snapshots/s1', { name: 'keep' }));
    assert.deepEqual((await api.get('/1.0/containers/c/snapshots')).json.metadata, [
      '/1.0/containers/c/snapshots/keep',
    ]);
    await cli.ok(['snapshot', 'c', 'viacli']);
    assert.match(await cli.ok(['info', 'c']), /viacli/);
    await writeFile(`/proc/${await pidOf('c')}/root/root/note`, 'fourth');
    await cli.ok(['restore', 'c', 'keep']);
    assert.equal(await note('c'), 'first');
    await waitOp(api, await api.delete('/1.0/containers/c/snapshots/viacli'));
    await waitOp(api, await api.delete('/1.0/containers/c/snapshots/keep'));
    assert.deepEqual((await api.get('/1.0/containers/c/snapshots')).json.metadata, []);
    const snapDir = path.join(d.stateDir, 'storage-pools', 'bt', 'container-snapshots');
    const leftovers = await import('node:fs/promises').then((f) => f.readdir(snapDir).catch(() => [] as string[]));
    for (const dir of leftovers)
      assert.deepEqual(
        await import('node:fs/promises').then((f) => f.readdir(path.join(snapDir, dir))),
        [],
        'no snapshot subvolume left',
      );
  });
  test('a copy takes the snapshots along, each with its own content (btrfs to dir and btrfs to btrfs); container_only takes none', async () => {
    const priv = { 'security.privileged': 'true' };
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'src',
        config: priv,
        devices: { root: { type: 'disk', path: '/', pool: 'bt' } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(api, await api.put('/1.0/containers/src/state', { action: 'start' }));
    await writeFile(`/proc/${await pidOf('src')}/root/root/note`, 'one');
    await waitOp(api, await api.post('/1.0/containers/src/snapshots', { name: 'a1' }));
    await writeFile(`/proc/${await pidOf('src')}/root/root/note`, 'two');
    await waitOp(api, await api.post('/1.0/containers/src/snapshots', { name: 'a2' }));
    await writeFile(`/proc/${await pidOf('src')}/root/root/note`, 'three');
    const snapNames = async (name: string) =>
      (await api.get(`/1.0/containers/${name}/snapshots?recursion=1`)).json.metadata
        .map((x: { name: string }) => x.name)
        .sort();

    // To the dir pool: the live data and each snapshot's own data.
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'dst',
        config: priv,
        devices: { root: { type: 'disk', path: '/', pool: 'default' } },
        source: { type: 'copy', source: 'src' },
      }),
    );
    assert.deepEqual(await snapNames('dst'), ['a1', 'a2']);
    const srcSnap = (await api.get('/1.0/containers/src/snapshots/a1')).json.metadata;
    const dstSnap = (await api.get('/1.0/containers/dst/snapshots/a1')).json.metadata;
    assert.equal(dstSnap.created_at, srcSnap.created_at, 'the snapshot keeps its creation time');
    await waitOp(api, await api.put('/1.0/containers/dst/state', { action: 'start' }));
    assert.equal(await note('dst'), 'three');
    // The copy's own data survives its next reconciles (a stop and a start): it is copied once.
    await writeFile(`/proc/${await pidOf('dst')}/root/root/note`, 'mine');
    await waitOp(api, await api.put('/1.0/containers/dst/state', { action: 'stop', force: true }));
    await waitOp(api, await api.put('/1.0/containers/dst/state', { action: 'start' }));
    assert.equal(await note('dst'), 'mine', 'the copy kept its own data');
    for (const [snap, want] of [
      ['a1', 'one'],
      ['a2', 'two'],
    ] as const) {
      const before = await pidOf('dst');
      await waitOp(api, await api.put('/1.0/containers/dst', { restore: snap }));
      await eventually(async () => (await pidOf('dst')) !== before, `dst restarted after restoring ${snap}`);
      assert.equal(await note('dst'), want, `dst restored to ${snap}`);
    }
    // Copied snapshots follow the copy's pool (as LXD's do): restoring one keeps the container where it is.
    assert.equal(
      (await api.get('/1.0/containers/dst/snapshots/a2')).json.metadata.expanded_devices.root.pool,
      'default',
    );
    assert.equal((await api.get('/1.0/containers/dst')).json.metadata.expanded_devices.root.pool, 'default');
    // The source is untouched, and each copy's snapshots are its own: deleting one leaves the other's.
    assert.equal(await note('src'), 'three');
    await waitOp(api, await api.delete('/1.0/containers/dst/snapshots/a1'));
    assert.deepEqual(await snapNames('src'), ['a1', 'a2']);

    // container_only: no snapshots; the lxc CLI's copy (btrfs to btrfs) takes them along.
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'bare',
        config: priv,
        devices: { root: { type: 'disk', path: '/', pool: 'bt' } },
        source: { type: 'copy', source: 'src', container_only: true },
      }),
    );
    assert.deepEqual(await snapNames('bare'), []);
    await cli.ok(['copy', 'src', 'viacli']);
    assert.deepEqual(await snapNames('viacli'), ['a1', 'a2']);
    await cli.ok(['start', 'viacli']);
    assert.equal(await note('viacli'), 'three');
    await cli.ok(['restore', 'viacli', 'a1']);
    assert.equal(await note('viacli'), 'one');
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rename, rm, statfs, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { cleanupHostUnder, loopsUnder, mountsUnder } from '../support/host-cleanup.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';

const run = promisify(execFile);

/** The host directory of the only custom volume of a pool whose data lives at `poolPath`. */
async function onlyVolumeDir(poolPath: string): Promise<string[]> {
  const entries = (await readdir(path.join(poolPath, 'custom'))).filter((e) => !e.includes('.'));
  return entries.map((e) => path.join(poolPath, 'custom', e));
}

async function waitOp(api: Client, res: { status: number; json: any; text: string }) {
  assert.equal(res.status, 202, res.text);
  assert.equal(res.json.type, 'async');
  const done = await api.get(`${res.json.operation}/wait?timeout=60`);
  assert.equal(done.json.metadata.status, 'Success', done.json.metadata.err);
  return done.json.metadata;
}

describe('storage pools and volumes on real dir and btrfs', () => {
  let d: Daemon;
  let api: Client;
  let extDir: string;
  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    extDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-ext-'));
  });
  after(async () => {
    for (const p of ['bt', 'bt2', 'ext']) {
      const vols = (await api.get(`/1.0/storage-pools/${p}/volumes/custom`).catch(() => undefined))?.json?.metadata;
      for (const v of Array.isArray(vols) ? vols : []) await api.delete(v).catch(() => {});
      await api.delete(`/1.0/storage-pools/${p}`).catch(() => {});
    }
    await d?.stop().catch(() => {});
    if (d) await cleanupHostUnder(d.stateDir);
    await d?.destroy();
    await rm(extDir, { recursive: true, force: true });
  });

  test('first start: a default dir pool in the state directory, used by the default profile root disk', async () => {
    const p = (await api.get('/1.0/storage-pools/default')).json.metadata;
    assert.equal(p.driver, 'dir');
    assert.equal(p.config.source, path.join(d.stateDir, 'storage-pools', 'default'));
    assert.deepEqual(p.used_by, ['/1.0/profiles/default']);
    assert.deepEqual((await api.get('/1.0/profiles/default')).json.metadata.devices, {
      root: { type: 'disk', path: '/', pool: 'default' },
    });
    await eventually(
      async () => (await api.get('/1.0/storage-pools/default')).json.metadata.status === 'Created',
      'the default pool to be created',
    );
  });

  test('pool resources are real statfs figures, kept fresh by the observer', async () => {
    const res = await eventually(async () => {
      const r = await api.get('/1.0/storage-pools/default/resources');
      return r.status === 200 ? r : undefined;
    }, 'pool resources');
    const m = res.json.metadata;
    const fs = await statfs(path.join(d.stateDir, 'storage-pools', 'default'));
    const total = fs.blocks * fs.bsize;
    assert.equal(m.space.total, total);
    assert.ok(m.space.used > 0 && m.space.used < total);
    assert.equal(m.inodes.total, fs.files);
    assert.ok(m.inodes.used > 0);
  });

  test('a btrfs loop pool: created, mounted, listed; config recorded; volumes get real quotas', async () => {
    const r = await api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '256MiB' } });
    assert.equal(r.status, 200, r.text);
    const p = (await api.get('/1.0/storage-pools/bt')).json.metadata;
    assert.equal(p.status, 'Created');
    assert.equal(p.config.source, path.join(d.stateDir, 'disks', 'bt.img'));
    assert.equal(p.config['volatile.initial_source'], undefined, 'no source was given');
    const mountPoint = path.join(d.stateDir, 'storage-pools', 'bt');
    assert.ok((await mountsUnder(mountPoint)).includes(mountPoint));
    assert.equal((await loopsUnder(d.stateDir)).length, 1);
    // btrfs.mount_options applies live (remount).
    const superOpts = async () =>
      (await readFile('/proc/self/mountinfo', 'utf8'))
        .split('\n')
        .find((l) => l.split(' ')[4] === mountPoint)
        ?.split(' - ')[1] ?? '';
    assert.doesNotMatch(await superOpts(), /compress=zstd/);
    assert.equal(
      (
        await api.patch('/1.0/storage-pools/bt', {
          config: { 'btrfs.mount_options': 'user_subvol_rm_allowed,compress=zstd:3' },
        })
      ).status,
      200,
    );
    assert.match(await superOpts(), /compress=zstd:3/);
    const names = (await api.get('/1.0/storage-pools?recursion=1')).json.metadata.map((x: { name: string }) => x.name);
    assert.deepEqual(names, ['bt', 'default']);

    assert.equal(
      (await api.post('/1.0/storage-pools/bt/volumes/custom', { name: 'data', config: { size: '40MiB' } })).status,
      200,
    );
    const [dir] = await onlyVolumeDir(mountPoint);
    await writeFile(path.join(dir!, 'small'), Buffer.alloc(5 * 1024 * 1024, 1));
    // EDQUOT is -122 (Node has no name for it).
    await assert.rejects(writeFile(path.join(dir!, 'big'), randomBytes(60 * 1024 * 1024)), /EDQUOT|ENOSPC|-122/);
    await rm(path.join(dir!, 'big'), { force: true });
    // Let btrfs commit the freed space to the qgroup before the next writes.
    await run('btrfs', ['filesystem', 'sync', dir!]);
    const v = (await api.get('/1.0/storage-pools/bt/volumes/custom/data')).json.metadata;
    assert.equal(v.type, 'custom');
    assert.equal(v.config.size, '40MiB');
    assert.deepEqual((await api.get('/1.0/storage-pools/bt/volumes')).json.metadata, [
      '/1.0/storage-pools/bt/volumes/custom/data',
    ]);
  });

  test('snapshots (async), restore (PUT restore) and rename keep the data where it is', async () => {
    const [dir] = await onlyVolumeDir(path.join(d.stateDir, 'storage-pools', 'bt'));
    await writeFile(path.join(dir!, 'note'), 'before');
    const op = await waitOp(
      api,
      await api.post('/1.0/storage-pools/bt/volumes/custom/data/snapshots', { name: 'snap1' }),
    );
    assert.deepEqual(op.resources.storage_volume_snapshots, [
      '/1.0/storage-pools/bt/volumes/custom/data/snapshots/snap1',
    ]);
    assert.deepEqual((await api.get('/1.0/storage-pools/bt/volumes/custom/data/snapshots')).json.metadata, [
      '/1.0/storage-pools/bt/volumes/custom/data/snapshots/snap1',
    ]);
    expectError(await api.post('/1.0/storage-pools/bt/volumes/custom/data/snapshots', { name: 'snap1' }), 409);
    await writeFile(path.join(dir!, 'note'), 'after');
    assert.equal((await api.put('/1.0/storage-pools/bt/volumes/custom/data', { restore: 'snap1' })).status, 200);
    const [restored] = await onlyVolumeDir(path.join(d.stateDir, 'storage-pools', 'bt'));
    assert.equal(await readFile(path.join(restored!, 'note'), 'utf8'), 'before');

    await waitOp(api, await api.post('/1.0/storage-pools/bt/volumes/custom/data/snapshots/snap1', { name: 'first' }));
    assert.equal(
      (await api.get('/1.0/storage-pools/bt/volumes/custom/data/snapshots/first')).json.metadata.name,
      'first',
    );
    const put = await api.put('/1.0/storage-pools/bt/volumes/custom/data/snapshots/first', {
      description: 'the first',
    });
    assert.equal(put.json.metadata.description, 'the first');

    const ren = await api.post('/1.0/storage-pools/bt/volumes/custom/data', { name: 'data2' });
    assert.equal(ren.status, 200, ren.text);
    expectError(await api.get('/1.0/storage-pools/bt/volumes/custom/data'), 404);
    assert.equal(await readFile(path.join(restored!, 'note'), 'utf8'), 'before', 'a rename moves no data');
  });

  test('copy to a dir pool with a user-given source, then move back to a second btrfs pool, snapshots included', async () => {
    const src = path.join(extDir, 'pool');
    assert.equal(
      (await api.post('/1.0/storage-pools', { name: 'ext', driver: 'dir', config: { source: src } })).status,
      200,
    );
    assert.equal((await api.get('/1.0/storage-pools/ext')).json.metadata.config['volatile.initial_source'], src);
    // A size limit cannot follow the copy to a dir pool on this host (no project quotas): refused, nothing made.
    const refused = await api.post('/1.0/storage-pools/ext/volumes/custom', {
      name: 'copy',
      source: { type: 'copy', pool: 'bt', name: 'data2' },
    });
    assert.match(expectError(refused, 400), /project quotas/);
    assert.deepEqual((await api.get('/1.0/storage-pools/ext/volumes')).json.metadata, []);
    assert.equal((await api.patch('/1.0/storage-pools/bt/volumes/custom/data2', { config: { size: '' } })).status, 200);
    await waitOp(
      api,
      await api.post('/1.0/storage-pools/ext/volumes/custom', {
        name: 'copy',
        source: { type: 'copy', pool: 'bt', name: 'data2' },
      }),
    );
    const [copyDir] = await onlyVolumeDir(src);
    assert.equal(await readFile(path.join(copyDir!, 'note'), 'utf8'), 'before');
    await waitOp(
      api,
      await api.post('/1.0/storage-pools/ext/volumes/custom', {
        name: 'fromsnap',
        source: { type: 'copy', pool: 'bt', name: 'data2/first' },
      }),
    );

    assert.equal(
      (await api.post('/1.0/storage-pools', { name: 'bt2', driver: 'btrfs', config: { size: '200MiB' } })).status,
      200,
    );
    await waitOp(api, await api.post('/1.0/storage-pools/ext/volumes/custom/copy/snapshots', { name: 's' }));
    await writeFile(path.join(copyDir!, 'note'), 'live');
    await waitOp(api, await api.post('/1.0/storage-pools/ext/volumes/custom/copy', { name: 'moved', pool: 'bt2' }));
    expectError(await api.get('/1.0/storage-pools/ext/volumes/custom/copy'), 404);
    // The copy kept data2's snapshot "first"; the move kept both.
    assert.deepEqual((await api.get('/1.0/storage-pools/bt2/volumes/custom/moved/snapshots')).json.metadata, [
      '/1.0/storage-pools/bt2/volumes/custom/moved/snapshots/first',
      '/1.0/storage-pools/bt2/volumes/custom/moved/snapshots/s',
    ]);
    const [movedDir] = await onlyVolumeDir(path.join(d.stateDir, 'storage-pools', 'bt2'));
    assert.equal(await readFile(path.join(movedDir!, 'note'), 'utf8'), 'live');
    assert.deepEqual((await readdir(path.join(src, 'custom'))).length, 1, 'only "fromsnap" is left on ext');
    // The moved snapshot still holds the old content.
    assert.equal((await api.put('/1.0/storage-pools/bt2/volumes/custom/moved', { restore: 's' })).status, 200);
    const [afterRestore] = await onlyVolumeDir(path.join(d.stateDir, 'storage-pools', 'bt2'));
    assert.equal(await readFile(path.join(afterRestore!, 'note'), 'utf8'), 'before');

    // A copy of a whole volume keeps its snapshots (what `lxc storage volume copy/move` rely on).
    await writeFile(path.join(afterRestore!, 'note'), 'live2');
    await waitOp(
      api,
      await api.post('/1.0/storage-pools/bt2/volumes/custom', {
        name: 'twin',
        source: { type: 'copy', pool: 'bt2', name: 'moved' },
      }),
    );
    assert.deepEqual((await api.get('/1.0/storage-pools/bt2/volumes/custom/twin/snapshots')).json.metadata, [
      '/1.0/storage-pools/bt2/volumes/custom/twin/snapshots/first',
      '/1.0/storage-pools/bt2/volumes/custom/twin/snapshots/s',
    ]);
    assert.equal((await api.put('/1.0/storage-pools/bt2/volumes/custom/twin', { restore: 's' })).status, 200);
    const notes = await Promise.all(
      (await onlyVolumeDir(path.join(d.stateDir, 'storage-pools', 'bt2'))).map((dir) =>
        readFile(path.join(dir, 'note'), 'utf8'),
      ),
    );
    assert.deepEqual(notes.sort(), ['before', 'live2']);
    expectError(await api.put('/1.0/storage-pools/bt2/volumes/custom/twin', { restore: 'moved/s' }), 400);
    assert.equal((await api.delete('/1.0/storage-pools/bt2/volumes/custom/twin')).status, 200);
  });

  test('used_by: a profile disk device holds a volume; deleting a used volume or a pool with volumes is refused', async () => {
    assert.equal(
      (
        await api.post('/1.0/profiles', {
          name: 'withvol',
          devices: { data: { type: 'disk', pool: 'bt2', source: 'moved', path: '/mnt' } },
        })
      ).status,
      200,
    );
    assert.deepEqual((await api.get('/1.0/storage-pools/bt2/volumes/custom/moved')).json.metadata.used_by, [
      '/1.0/profiles/withvol',
    ]);
    assert.ok((await api.get('/1.0/storage-pools/bt2')).json.metadata.used_by.includes('/1.0/profiles/withvol'));
    expectError(await api.delete('/1.0/storage-pools/bt2/volumes/custom/moved'), 400);
    expectError(await api.delete('/1.0/storage-pools/bt2'), 400);
    await api.delete('/1.0/profiles/withvol');
    assert.equal((await api.delete('/1.0/storage-pools/bt2/volumes/custom/moved')).status, 200);
    const del = await api.delete('/1.0/storage-pools/bt2');
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(await mountsUnder(path.join(d.stateDir, 'storage-pools', 'bt2')), []);
    assert.deepEqual((await readdir(path.join(d.stateDir, 'disks'))).sort(), ['bt.img']);
  });

  test('self-healing: after a simulated reboot (unmounted, loop detached) the pool is mounted again without any request', async () => {
    await d.stop();
    const mountPoint = path.join(d.stateDir, 'storage-pools', 'bt');
    await cleanupHostUnder(path.join(d.stateDir, 'storage-pools'));
    for (const l of await loopsUnder(d.stateDir)) await run('losetup', ['-d', l]);
    assert.deepEqual(await mountsUnder(mountPoint), []);
    await d.restart();
    await eventually(
      async () => (await mountsUnder(mountPoint)).includes(mountPoint),
      'the pool to be mounted again',
      20_000,
    );
    const vols = (await api.get('/1.0/storage-pools/bt/volumes/custom?recursion=1')).json.metadata;
    assert.deepEqual(
      vols.map((v: { name: string }) => v.name),
      ['data2'],
    );
    const [dir] = await onlyVolumeDir(mountPoint);
    assert.equal(await readFile(path.join(dir!, 'note'), 'utf8'), 'before', 'data survived');
  });

  test('a pool whose backing file is gone shows an error state and does not block the others', async () => {
    await d.stop();
    await cleanupHostUnder(path.join(d.stateDir, 'storage-pools'));
    for (const l of await loopsUnder(d.stateDir)) await run('losetup', ['-d', l]);
    const img = path.join(d.stateDir, 'disks', 'bt.img');
    await rename(img, `${img}.away`);
    try {
      await d.restart();
      // The pool is first seen unmounted, then its reconcile names the missing file.
      const bt = await eventually(
        async () => {
          const p = (await api.get('/1.0/storage-pools/bt')).json.metadata;
          return p.status === 'Unavailable' && /bt\.img/.test(p.status_detail) ? p : undefined;
        },
        'the pool to be reported unavailable, naming its missing backing file',
        20_000,
      );
      assert.match(bt.status_detail, /missing/);
      expectError(await api.get('/1.0/storage-pools/bt/resources'), 500);
      // Other pools work meanwhile.
      assert.equal((await api.post('/1.0/storage-pools/default/volumes/custom', { name: 'ok' })).status, 200);
      assert.equal((await api.get('/1.0/storage-pools/default')).json.metadata.status, 'Created');
      assert.equal((await api.delete('/1.0/storage-pools/default/volumes/custom/ok')).status, 200);
    } finally {
      await rename(`${img}.away`, img);
    }
    // Once the file is back, the next desired write (or the periodic resync) brings the pool back.
    assert.equal((await api.patch('/1.0/storage-pools/bt', { description: 'back' })).status, 200);
    assert.equal((await api.get('/1.0/storage-pools/bt')).json.metadata.status, 'Created');
  });

  test('deleting a pool removes its mount, loop device and file', async () => {
    assert.equal((await api.delete('/1.0/storage-pools/bt/volumes/custom/data2')).status, 200);
    assert.equal((await api.delete('/1.0/storage-pools/bt')).status, 200);
    assert.deepEqual(await mountsUnder(path.join(d.stateDir, 'storage-pools')), []);
    assert.deepEqual(await loopsUnder(d.stateDir), []);
    assert.deepEqual(await readdir(path.join(d.stateDir, 'disks')), []);
    expectError(await api.get('/1.0/storage-pools/bt'), 404);
  });
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { formCluster, startClusterHosts, type TestCluster } from '../support/cluster.ts';
import { waitOp } from '../support/container-env.ts';
import { eventually, expectError } from '../support/http.ts';
import { importTestImage, stopHosts, type Host } from '../support/two-hosts.ts';

/**
 * Moving a container between members (`POST /1.0/containers/<name>?target=<member>`, as lxc move --target
 * sends it): the rootfs and snapshots go from the holder's pool to the target's, the one row flips its
 * location, the old copy goes; refusals and a failed move change nothing.
 */
describe('moving a container between cluster members', {
  skip: !process.env.SVCD_TEST_PG_URL && 'SVCD_TEST_PG_URL unset',
}, () => {
  let cl: TestCluster;
  let a: Host;
  let b: Host;
  let c: Host;
  let imgDir: string | undefined;
  const lxcDirs = (h: Host) => readdir(path.join(h.daemon.stateDir, 'containers')).catch(() => [] as string[]);
  const pool = (h: Host, ...p: string[]) => path.join(h.daemon.stateDir, 'storage-pools', 'default', ...p);
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );
  const location = async (h: Host, name: string) => (await h.api.get(`/1.0/containers/${name}`)).json.metadata.location;

  before(async () => {
    cl = await startClusterHosts(3);
    [a, b, c] = cl.hosts as [Host, Host, Host];
    ({ dir: imgDir } = await importTestImage(a, { alias: 'bb' }));
    await formCluster(a, [b, c]);
  });
  after(async () => {
    for (const h of [a, b]) {
      const list = (await h?.api.get('/1.0/containers?recursion=1').catch(() => undefined))?.json?.metadata;
      for (const ct of Array.isArray(list) ? list : []) {
        if (ct.location !== h.name) continue;
        await h.api
          .put(`/1.0/containers/${ct.name}/state`, { action: 'stop', force: true })
          .then((r) => h.api.get(`${r.json.operation}/wait?timeout=60`))
          .catch(() => {});
        await h.api
          .delete(`/1.0/containers/${ct.name}`)
          .then((r) => h.api.get(`${r.json.operation}/wait?timeout=60`))
          .catch(() => {});
      }
    }
    await stopHosts([a, b, c], [imgDir]);
    await cl?.drop();
  });

  test('a stopped container with a snapshot moves from a to b through the API', async () => {
    const before = new Set(await lxcDirs(a));
    await waitOp(
      b.api,
      await b.api.post('/1.0/containers?target=a', { name: 'mv1', source: { type: 'image', alias: 'bb' } }),
    );
    await waitOp(b.api, await b.api.put('/1.0/containers/mv1/state', { action: 'start' }));
    await waitOp(b.api, await b.api.put('/1.0/containers/mv1/state', { action: 'stop', force: true }));
    const id = (await lxcDirs(a)).find((d) => !before.has(d));
    assert.ok(id, 'the container has an LXC directory on a');
    // A file written before the move (in container ids, as svcd keeps root filesystems), then a snapshot.
    await mkdir(pool(a, 'containers', id, 'rootfs', 'root'), { recursive: true });
    await writeFile(pool(a, 'containers', id, 'rootfs', 'root', 'before-move'), 'written on a\n');
    await waitOp(b.api, await b.api.post('/1.0/containers/mv1/snapshots', { name: 'snap0' }));
    const [snapId] = await readdir(pool(a, 'containers-snapshots', id));
    assert.ok(snapId, 'the snapshot is on a');

    // The request as lxc move --target sends it, through a member that holds neither side (c).
    const t0 = Date.now();
    await waitOp(c.api, await c.api.post('/1.0/containers/mv1?target=b', { name: 'mv1', migration: true, live: true }));
    const took = Date.now() - t0;

    assert.equal(await location(a, 'mv1'), 'b');
    assert.equal(await location(c, 'mv1'), 'b');
    // One row: the name is listed once, with its snapshot.
    const names = (await a.api.get('/1.0/containers')).json.metadata as string[];
    assert.equal(names.filter((n) => n.endsWith('/mv1')).length, 1);
    assert.deepEqual((await b.api.get('/1.0/containers/mv1/snapshots')).json.metadata, [
      '/1.0/containers/mv1/snapshots/snap0',
    ]);
    // On b's host: its LXC directory, its rootfs with the file, its snapshot (same id) with the file.
    assert.ok((await lxcDirs(b)).includes(id), 'LXC directory on b');
    assert.equal(await readFile(pool(b, 'containers', id, 'rootfs', 'root', 'before-move'), 'utf8'), 'written on a\n');
    assert.equal(
      await readFile(pool(b, 'containers-snapshots', id, snapId, 'rootfs', 'root', 'before-move'), 'utf8'),
      'written on a\n',
    );
    // Gone from a's host.
    await eventually(
      async () =>
        !(await lxcDirs(a)).includes(id) &&
        !(await exists(pool(a, 'containers', id))) &&
        !(await exists(pool(a, 'containers-snapshots', id, snapId)))
          ? true
          : undefined,
      "a's copy removed",
      15_000,
    );
    assert.deepEqual(await readdir(path.join(a.daemon.stateDir, 'migrations')).catch(() => []), []);
    // It starts on b, and the file is there (read through a, forwarded to b).
    await waitOp(a.api, await a.api.put('/1.0/containers/mv1/state', { action: 'start' }));
    assert.equal((await b.api.get('/1.0/containers/mv1/state')).json.metadata.status, 'Running');
    const got = await a.api.get('/1.0/containers/mv1/files?path=/root/before-move');
    assert.equal(got.status, 200);
    assert.equal(got.text, 'written on a\n');
    console.log(`move of a stopped container with one snapshot: ${took} ms`);
  });

  test('a running container: refused live, moved with live false (stopped, moved, started again)', async () => {
    assert.equal(await location(a, 'mv1'), 'b');
    const refused = expectError(await a.api.post('/1.0/containers/mv1?target=a', { migration: true, live: true }), 400);
    assert.match(refused, /CRIU.*--stateless/);
    await waitOp(a.api, await a.api.post('/1.0/containers/mv1?target=a', { migration: true, live: false }));
    assert.equal(await location(b, 'mv1'), 'a');
    assert.equal((await a.api.get('/1.0/containers/mv1/state')).json.metadata.status, 'Running');
    await eventually(async () => (!(await lxcDirs(b)).length ? true : undefined), "b's copy removed", 15_000);
  });

  test('the target killed mid-transfer: the move fails, nothing changed, its staging swept at its next start', async () => {
    const before = new Set(await lxcDirs(a));
    await waitOp(
      a.api,
      await a.api.post('/1.0/containers?target=a', { name: 'mv2', source: { type: 'image', alias: 'bb' } }),
    );
    await waitOp(a.api, await a.api.put('/1.0/containers/mv2/state', { action: 'start' }));
    await waitOp(a.api, await a.api.put('/1.0/containers/mv2/state', { action: 'stop', force: true }));
    const id = (await lxcDirs(a)).find((d) => !before.has(d))!;
    // 24 MB at 4 MB/s (the pool's rsync.bwlimit, which the source applies): a few seconds to cut it.
    await writeFile(pool(a, 'containers', id, 'rootfs', 'big'), randomBytes(24 << 20));
    assert.equal((await a.api.patch('/1.0/storage-pools/default', { config: { 'rsync.bwlimit': '4MB' } })).status, 200);
    try {
      const started = await a.api.post('/1.0/containers/mv2?target=b', { migration: true, live: false });
      assert.equal(started.status, 202, started.text);
      await eventually(
        async () => ((await exists(pool(b, 'containers', id))) ? true : undefined),
        'staging on b',
        20_000,
      );
      await b.daemon.kill();
      const end = (await a.api.get(`${started.json.operation}/wait?timeout=60`)).json.metadata;
      assert.equal(end.status, 'Failure');
      assert.match(end.err, /Moving container "mv2" to member "b" failed/);
    } finally {
      await a.api.patch('/1.0/storage-pools/default', { config: { 'rsync.bwlimit': '1000MB' } });
    }
    // Nothing changed: still a's, its copy whole, no mark left.
    assert.equal(await location(a, 'mv2'), 'a');
    assert.equal((await stat(pool(a, 'containers', id, 'rootfs', 'big'))).size, 24 << 20);
    assert.ok((await lxcDirs(a)).includes(id));
    assert.deepEqual(await readdir(path.join(a.daemon.stateDir, 'migrations')).catch(() => []), []);
    // b at its next start removes what it had staged.
    await b.daemon.restart();
    await eventually(
      async () => ((await a.api.get('/1.0/cluster/members/b')).json.metadata.status === 'Online' ? true : undefined),
      'b Online again',
      30_000,
    );
    await eventually(async () => (!(await exists(pool(b, 'containers', id))) ? true : undefined), 'b swept', 20_000);
    assert.deepEqual(await readdir(path.join(b.daemon.stateDir, 'migrations')).catch(() => []), []);
    // And the move works now.
    await waitOp(a.api, await a.api.post('/1.0/containers/mv2?target=b', { migration: true }));
    assert.equal(await location(a, 'mv2'), 'b');
    assert.equal((await stat(pool(b, 'containers', id, 'rootfs', 'big'))).size, 24 << 20);
  });

  test('a copy to another member (source type copy, ?target=) is pulled from the holder', async () => {
    // mv1 runs on a; the copy is asked of c and placed on b, with its snapshot.
    assert.equal(await location(c, 'mv1'), 'a');
    await waitOp(
      c.api,
      await c.api.post('/1.0/containers?target=b', { name: 'cp1', source: { type: 'copy', source: 'mv1' } }),
    );
    assert.equal(await location(a, 'cp1'), 'b');
    assert.equal(await location(a, 'mv1'), 'a');
    assert.deepEqual((await a.api.get('/1.0/containers/cp1/snapshots')).json.metadata, [
      '/1.0/containers/cp1/snapshots/snap0',
    ]);
    await waitOp(a.api, await a.api.put('/1.0/containers/cp1/state', { action: 'start' }));
    assert.equal((await b.api.get('/1.0/containers/cp1/state')).json.metadata.status, 'Running');
    assert.equal((await a.api.get('/1.0/containers/cp1/files?path=/root/before-move')).text, 'written on a\n');
    await waitOp(a.api, await a.api.put('/1.0/containers/cp1/state', { action: 'stop', force: true }));
    await waitOp(a.api, await a.api.delete('/1.0/containers/cp1'));
  });

  test('refusals: same member, unknown member, an offline target; nothing changes', async () => {
    await waitOp(a.api, await a.api.put('/1.0/containers/mv1/state', { action: 'stop', force: true }));
    assert.match(expectError(await b.api.post('/1.0/containers/mv1?target=a', { migration: true }), 400), /different/);
    expectError(await b.api.post('/1.0/containers/mv1?target=nosuch', { migration: true }), 404);
    await waitOp(a.api, await a.api.post('/1.0/containers/mv1/backups', { name: 'bk0' }));
    assert.match(expectError(await b.api.post('/1.0/containers/mv1?target=b', { migration: true }), 400), /backups/);
    await waitOp(a.api, await a.api.delete('/1.0/containers/mv1/backups/bk0'));
    assert.equal((await a.api.patch('/1.0', { config: { 'cluster.offline_threshold': '5' } })).status, 200);
    await c.daemon.kill();
    await eventually(
      async () => ((await a.api.get('/1.0/cluster/members/c')).json.metadata.status === 'Offline' ? true : undefined),
      'c Offline',
      20_000,
    );
    const off = expectError(await b.api.post('/1.0/containers/mv1?target=c', { migration: true }), 400);
    assert.match(off, /"c" is offline/);
    assert.equal(await location(b, 'mv1'), 'a');
    await waitOp(b.api, await b.api.put('/1.0/containers/mv1/state', { action: 'start' }));
    assert.equal((await a.api.get('/1.0/containers/mv1/state')).json.metadata.status, 'Running');
  });
});

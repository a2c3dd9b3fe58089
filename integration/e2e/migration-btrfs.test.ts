/**
 * Migration between two svcd daemons' btrfs pools by btrfs send/receive (LXD's BTRFS transfer), and
 * the rsync fallback when one side's pool is a directory. That btrfs carried the data shows on the
 * sink: its snapshot subvolumes have a received uuid (`btrfs subvolume show`), which only `btrfs
 * receive` sets. A stream cut mid-way, a full pool on the sink and a sink killed -9 mid-stream leave
 * no row, mark or subvolume on the sink, and the source's read-only send snapshot is gone too.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { receivedUuids } from '../support/btrfs-subvolumes.ts';
import { eventually } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { startTcpCutter } from '../support/tcp-cutter.ts';
import { importTestImage, startTwoHosts, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = await lxcSkipReason();
const PASSWORD = 'bt-mig-s3cret';

describe('migration between btrfs pools by btrfs send/receive', { skip }, () => {
  let a: Host;
  let b: Host;
  let lxc: LxcCli;
  const dirs: string[] = [];
  const poolDir = (h: Host, pool = 'bt') => path.join(h.daemon.stateDir, 'storage-pools', pool);

  const exec = async (h: Host, name: string, cmd: string[]) => {
    const r = await h.api.post(`/1.0/containers/${name}/exec`, {
      command: cmd,
      'wait-for-websocket': false,
      'record-output': true,
      interactive: false,
    });
    const op = await waitOp(h.api, r);
    const out = await h.api.get(op.metadata.output['1']);
    return { code: op.metadata.return as number, out: out.text };
  };
  const state = async (h: Host, name: string, action: string) =>
    waitOp(h.api, await h.api.put(`/1.0/containers/${name}/state`, { action, force: true }));

  /** The copy on `h` has s1 and s2 in order, the live files, and s1 holds its own content. */
  async function checkCopy(h: Host, name: string) {
    const snaps = (await h.api.get(`/1.0/containers/${name}/snapshots?recursion=1`)).json.metadata as any[];
    assert.deepEqual(
      snaps.map((s) => s.name),
      ['s1', 's2'],
    );
    await state(h, name, 'start');
    assert.equal((await exec(h, name, ['cat', '/root/two', '/root/three'])).out, 'two\nthree\n');
    assert.notEqual((await exec(h, name, ['test', '-e', '/root/one'])).code, 0);
    await state(h, name, 'stop');
    await waitOp(h.api, await h.api.put(`/1.0/containers/${name}`, { restore: 's1' }));
    await state(h, name, 'start');
    assert.equal((await exec(h, name, ['cat', '/root/one'])).out, 'one\n');
    assert.notEqual((await exec(h, name, ['test', '-e', '/root/two'])).code, 0);
    await state(h, name, 'stop');
  }

  /** Start a pull copy of a:`name` to b:`as` on b's pool `pool` through the API; the two operations. */
  async function startCopy(name: string, as: string, opts: { url?: string; pool?: string } = {}) {
    const src = await a.api.post(`/1.0/containers/${name}`, { name: '', migration: true });
    assert.equal(src.status, 202, src.text);
    const op = (await a.api.get(src.json.operation)).json.metadata;
    const sink = await b.api.post('/1.0/containers', {
      name: as,
      devices: { root: { type: 'disk', path: '/', pool: opts.pool ?? 'bt' } },
      source: {
        type: 'migration',
        mode: 'pull',
        operation: `${opts.url ?? a.url}/1.0/operations/${op.id}`,
        certificate: a.cert,
        secrets: op.metadata,
      },
    });
    assert.equal(sink.status, 202, sink.text);
    return { source: src.json.operation as string, sink: sink.json.operation as string };
  }
  const ended = async (h: Host, op: string) => (await h.api.get(`${op}/wait?timeout=120`)).json.metadata;
  const snapshotsDir = (h: Host) => path.join(poolDir(h), 'containers-snapshots');

  before(async () => {
    await ensureRootSubids();
    [a, b] = await startTwoHosts();
    for (const h of [a, b]) {
      assert.equal((await h.api.patch('/1.0', { config: { 'core.trust_password': PASSWORD } })).status, 200);
      const r = await h.api.post('/1.0/storage-pools', { name: 'bt', driver: 'btrfs', config: { size: '768MiB' } });
      assert.equal(r.status, 200, r.text);
      dirs.push((await importTestImage(h, { alias: 'bb' })).dir);
    }
    lxc = await lxcCli(a.daemon.stateDir);
    for (const h of [a, b])
      await lxc.ok(['remote', 'add', h.name, h.url, '--password', PASSWORD, '--accept-certificate']);
    // on a's btrfs pool: a file, s1, one more file, s2, a third file and the first one gone
    await lxc.ok(['init', 'a:bb', 'a:c1', '--storage', 'bt']);
    await state(a, 'c1', 'start');
    await exec(a, 'c1', ['sh', '-c', 'echo one > /root/one']);
    await waitOp(a.api, await a.api.post('/1.0/containers/c1/snapshots', { name: 's1' }));
    await exec(a, 'c1', ['sh', '-c', 'echo two > /root/two']);
    await waitOp(a.api, await a.api.post('/1.0/containers/c1/snapshots', { name: 's2' }));
    await exec(a, 'c1', [
      'sh',
      '-c',
      'echo three > /root/three; rm /root/one; head -c 40000000 /dev/urandom > /root/blob',
    ]);
    await state(a, 'c1', 'stop');
  });
  after(async () => {
    await teardownContainers(a?.daemon, a?.api);
    await teardownContainers(b?.daemon, b?.api);
    await stopHosts([a, b], dirs);
    await lxc?.cleanup();
  });

  test('btrfs → btrfs: the snapshots and the volume arrive as received subvolumes, with progress', async () => {
    const before = receivedUuids(snapshotsDir(b));
    const ops = await startCopy('c1', 'c1');
    const sink = await ended(b, ops.sink);
    assert.equal(sink.status, 'Success', sink.err);
    assert.equal((await ended(a, ops.source)).status, 'Success');
    assert.match(sink.metadata.fs_progress, /^c1: [\d.]+MB \([\d.]+[kM]?B\/s\)$/);
    const made = [...receivedUuids(snapshotsDir(b))].filter(([p]) => !before.has(p));
    assert.equal(made.length, 2, 'two snapshot subvolumes on the sink');
    for (const [p, uuid] of made) assert.match(uuid, /^[0-9a-f-]{36}$/, `${p} came by btrfs receive`);
    await checkCopy(b, 'c1');
    // nothing of the transfer left: no landing directory on the sink, no send snapshot on the source
    assert.deepEqual(
      readdirSync(path.join(poolDir(b), 'containers')).filter((n) => n.includes('.')),
      [],
    );
    const srcSnaps = receivedUuids(snapshotsDir(a));
    assert.equal(srcSnaps.size, 2, 'the source keeps its two snapshots and nothing else');
  });

  test('a running container copied statelessly (lxc copy --stateless), a snapshot as a container, a custom volume', async () => {
    await state(a, 'c1', 'start');
    await lxc.ok(['copy', 'a:c1', 'b:run1', '--stateless', '--storage', 'bt']);
    await state(a, 'c1', 'stop');
    await state(b, 'run1', 'start');
    assert.equal((await exec(b, 'run1', ['cat', '/root/three'])).out, 'three\n');
    await state(b, 'run1', 'stop');

    // one snapshot as a container of its own: sent as it is (read-only already), no snapshots along
    await lxc.ok(['copy', 'a:c1/s1', 'b:froms1', '--storage', 'bt']);
    assert.deepEqual((await b.api.get('/1.0/containers/froms1/snapshots')).json.metadata, []);
    await state(b, 'froms1', 'start');
    assert.equal((await exec(b, 'froms1', ['cat', '/root/one'])).out, 'one\n');
    assert.notEqual((await exec(b, 'froms1', ['test', '-e', '/root/two'])).code, 0);
    await state(b, 'froms1', 'stop');

    await lxc.ok(['storage', 'volume', 'create', 'a:bt', 'v1']);
    await lxc.ok(['storage', 'volume', 'snapshot', 'a:bt', 'v1', 'vs1']);
    const before = receivedUuids(path.join(poolDir(b), 'custom-snapshots'));
    await lxc.ok(['storage', 'volume', 'copy', 'a:bt/v1', 'b:bt/v1']);
    const snaps = (await b.api.get('/1.0/storage-pools/bt/volumes/custom/v1/snapshots')).json.metadata;
    assert.deepEqual(snaps, ['/1.0/storage-pools/bt/volumes/custom/v1/snapshots/vs1']);
    const made = [...receivedUuids(path.join(poolDir(b), 'custom-snapshots'))].filter(([p]) => !before.has(p));
    assert.equal(made.length, 1);
    assert.match(made[0]![1], /^[0-9a-f-]{36}$/);
  });

  test('push and relay (lxc copy --mode): the same streams, dialled by the source or joined by lxc', async () => {
    for (const mode of ['push', 'relay']) {
      await lxc.ok(['copy', 'a:c1', `b:${mode}1`, '--mode', mode, '--storage', 'bt']);
      assert.match(b.daemon.output(), new RegExp(`"container":"${mode}1","fs":"BTRFS","snapshots":2`));
      await checkCopy(b, `${mode}1`);
    }
  });

  test('btrfs → dir falls back to rsync', async () => {
    await lxc.ok(['copy', 'a:c1', 'b:todir', '--storage', 'default']);
    assert.match(b.daemon.output(), /"container":"todir","fs":"RSYNC","snapshots":2,"msg":"container received"/);
    const ct = (await b.api.get('/1.0/containers/todir')).json.metadata;
    assert.equal(ct.expanded_devices.root.pool, 'default');
    await checkCopy(b, 'todir');
  });

  test('the stream cut mid-way: both fail, nothing is left on either side', async () => {
    const volumes = () => readdirSync(path.join(poolDir(b), 'containers')).sort();
    const had = volumes();
    const cutter = await startTcpCutter(a.port, 8_000_000);
    try {
      const ops = await startCopy('c1', 'cut', { url: `https://127.0.0.1:${cutter.port}` });
      const sink = await ended(b, ops.sink);
      assert.equal(sink.status, 'Failure');
      assert.ok(cutter.cut() > 0);
      assert.equal((await ended(a, ops.source)).status, 'Failure');
      assert.equal((await b.api.get('/1.0/containers/cut')).status, 404);
      await eventually(
        async () =>
          JSON.stringify(volumes()) === JSON.stringify(had) &&
          readdirSync(path.join(b.daemon.stateDir, 'migrations')).length === 0,
        'no volume, landing directory or mark of the failed copy on the sink',
        20_000,
      );
      await eventually(
        async () => receivedUuids(snapshotsDir(a)).size === 2,
        "the source's send snapshot is removed",
        20_000,
      );
    } finally {
      await cutter.close();
    }
  });

  test('a receiver error (the sink pool full): both fail, nothing is left on either side', async () => {
    const r = await b.api.post('/1.0/storage-pools', { name: 'tinybt', driver: 'btrfs', config: { size: '128MiB' } });
    assert.equal(r.status, 200, r.text);
    await lxc.ok(['init', 'a:bb', 'a:big', '--storage', 'bt']);
    await state(a, 'big', 'start');
    await exec(a, 'big', ['sh', '-c', 'head -c 150000000 /dev/urandom > /root/blob']);
    await waitOp(a.api, await a.api.post('/1.0/containers/big/snapshots', { name: 's0' }));
    await state(a, 'big', 'stop');
    const ops = await startCopy('big', 'full', { pool: 'tinybt' });
    const sink = await ended(b, ops.sink);
    assert.equal(sink.status, 'Failure');
    assert.match(sink.err, /space/i);
    assert.equal((await ended(a, ops.source)).status, 'Failure');
    assert.equal((await b.api.get('/1.0/containers/full')).status, 404);
    const tiny = poolDir(b, 'tinybt');
    await eventually(
      async () =>
        readdirSync(path.join(tiny, 'containers')).length === 0 &&
        receivedUuids(path.join(tiny, 'containers-snapshots')).size === 0 &&
        readdirSync(path.join(b.daemon.stateDir, 'migrations')).length === 0,
      'no volume, landing directory, snapshot or mark of the failed copy on the sink',
      20_000,
    );
    await eventually(
      async () => receivedUuids(snapshotsDir(a)).size === 3,
      'the source keeps its snapshots, and its send snapshot is gone',
      20_000,
    );
  });

  test('the sink killed -9 mid-stream: the restarted sink sweeps the landing directory and the volume', async () => {
    const containers = path.join(poolDir(b), 'containers');
    const had = readdirSync(containers).sort();
    const ops = await startCopy('big', 'killed');
    // the streams land next to the volume: kill as soon as they do
    const deadline = Date.now() + 30_000;
    while (!readdirSync(containers).some((n) => n.endsWith('.receiving'))) {
      assert.ok(Date.now() < deadline, 'the receive never started');
      await new Promise((r) => setTimeout(r, 10));
    }
    await b.daemon.kill();
    assert.equal((await ended(a, ops.source)).status, 'Failure');
    await b.daemon.restart();
    assert.equal((await b.api.get('/1.0/containers/killed')).status, 404);
    await eventually(
      async () =>
        JSON.stringify(readdirSync(containers).sort()) === JSON.stringify(had) &&
        readdirSync(path.join(b.daemon.stateDir, 'migrations')).length === 0,
      'no volume, landing directory or mark of the killed copy',
      20_000,
    );
    await eventually(
      async () => receivedUuids(snapshotsDir(a)).size === 3,
      "the source's send snapshot is gone",
      20_000,
    );
    await lxc.ok(['delete', 'a:big']);
  });
});

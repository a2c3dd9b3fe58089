/**
 * Migration faults between two svcd daemons: a sink killed -9 mid-transfer, a source killed -9, the
 * connection cut, a full disk on the sink, the source deleted mid-transfer, and a sink that never
 * connects. After each, both operations end with a clear error, and the sink (restarted where it was
 * killed) holds no row, volume, staging mark or snapshot of the failed copy; the source keeps its
 * container. The source pool's rsync.bwlimit slows the transfer so that each fault lands mid-stream.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { eventually } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { startTcpCutter } from '../support/tcp-cutter.ts';
import { importTestImage, startTwoHosts, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = await lxcSkipReason();

describe('migration faults leave nothing half-made', { skip }, () => {
  let a: Host;
  let b: Host;
  let tiny = '';
  const dirs: string[] = [];

  const exec = async (h: Host, name: string, cmd: string[]) =>
    waitOp(
      h.api,
      await h.api.post(`/1.0/containers/${name}/exec`, {
        command: cmd,
        'wait-for-websocket': false,
        interactive: false,
      }),
    );

  /** Start a pull copy of a:`name` to b:`as` through the API; the two operations' URLs. */
  async function startCopy(name: string, as: string, opts: { url?: string; pool?: string } = {}) {
    const src = await a.api.post(`/1.0/containers/${name}`, { name: '', migration: true });
    assert.equal(src.status, 202, src.text);
    const op = (await a.api.get(src.json.operation)).json.metadata;
    const sink = await b.api.post('/1.0/containers', {
      name: as,
      ...(opts.pool ? { devices: { root: { type: 'disk', path: '/', pool: opts.pool } } } : {}),
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
  /** Data is flowing: the sink's operation shows fs_progress. */
  const flowing = (op: string) =>
    eventually(
      async () => (await b.api.get(op)).json.metadata?.metadata?.fs_progress,
      'fs_progress on the sink',
      30_000,
    );
  /** Marks, and container volumes with no row, on b. */
  async function leftovers(poolDir = path.join(b.daemon.stateDir, 'storage-pools', 'default')) {
    const marks = (() => {
      try {
        return readdirSync(path.join(b.daemon.stateDir, 'migrations'));
      } catch {
        return [];
      }
    })();
    const vols = (() => {
      try {
        return readdirSync(path.join(poolDir, 'containers'));
      } catch {
        return [];
      }
    })();
    const rows = ((await b.api.get('/1.0/containers')).json.metadata as string[]).length;
    return { marks, extraVolumes: vols.length - rows };
  }
  const clean = async (poolDir?: string) =>
    eventually(
      async () => {
        const l = await leftovers(poolDir);
        return l.marks.length === 0 && l.extraVolumes === 0;
      },
      'no staging marks and no volume without a row on the sink',
      20_000,
    );

  before(async () => {
    await ensureRootSubids();
    [a, b] = await startTwoHosts();
    for (const h of [a, b]) dirs.push((await importTestImage(h, { alias: 'bb' })).dir);
    await waitOp(a.api, await a.api.post('/1.0/containers', { name: 'big', source: { type: 'image', alias: 'bb' } }));
    await waitOp(a.api, await a.api.put('/1.0/containers/big/state', { action: 'start' }));
    await exec(a, 'big', ['sh', '-c', 'head -c 60000000 /dev/urandom > /root/blob']);
    await waitOp(a.api, await a.api.post('/1.0/containers/big/snapshots', { name: 's0' }));
    await waitOp(a.api, await a.api.put('/1.0/containers/big/state', { action: 'stop', force: true }));
    // ~60 MB at 8 MB/s: several seconds of transfer for each fault to land in
    assert.equal(
      (await a.api.patch('/1.0/storage-pools/default', { config: { 'rsync.bwlimit': '8000' } })).status,
      200,
    );
    tiny = mkdtempSync(path.join(os.tmpdir(), 'svcd-tiny-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', tiny]);
    const p = await b.api.post('/1.0/storage-pools', { name: 'tiny', driver: 'dir', config: { source: tiny } });
    assert.equal(p.status, 200, p.text);
  });
  after(async () => {
    await teardownContainers(a?.daemon, a?.api);
    await teardownContainers(b?.daemon, b?.api);
    await b?.api.delete('/1.0/storage-pools/tiny').catch(() => undefined);
    await stopHosts([a, b], dirs);
    if (tiny) {
      try {
        execFileSync('umount', ['-l', tiny]);
      } catch {}
      rmSync(tiny, { recursive: true, force: true });
    }
  });

  test('a sink that never connects: the source gives up after 10 s', async () => {
    const src = await a.api.post('/1.0/containers/big', { name: '', migration: true });
    const t0 = Date.now();
    const op = await ended(a, src.json.operation);
    assert.equal(op.status, 'Failure');
    assert.match(op.err, /Timed out waiting for migration connections/);
    assert.ok(Date.now() - t0 < 20_000);
  });

  test('the sink killed -9 mid-transfer: the source fails; the restarted sink holds nothing', async () => {
    const ops = await startCopy('big', 'killsink');
    await flowing(ops.sink);
    const killed = b.daemon.proc.pid;
    const socketDirs = () => readdirSync(os.tmpdir()).filter((d) => d.startsWith(`svcd-mig-${killed}-`));
    assert.equal(socketDirs().length, 1, "the receiving rsync's socket directory, mid-transfer");
    await b.daemon.kill();
    const src = await ended(a, ops.source);
    assert.equal(src.status, 'Failure');
    assert.ok(src.err.length > 0);
    await b.daemon.restart();
    assert.equal((await b.api.get('/1.0/containers/killsink')).status, 404);
    await eventually(() => socketDirs().length === 0, "the killed sink's socket directory swept at its start");
    await clean();
  });

  test('the source killed -9 mid-transfer: the sink fails clearly and keeps nothing', async () => {
    const ops = await startCopy('big', 'killsource');
    await flowing(ops.sink);
    await a.daemon.kill();
    const sink = await ended(b, ops.sink);
    assert.equal(sink.status, 'Failure');
    assert.match(sink.err, /migration|closed|broke|rsync/i);
    assert.equal((await b.api.get('/1.0/containers/killsource')).status, 404);
    await clean();
    await a.daemon.restart();
    assert.equal((await a.api.get('/1.0/containers/big')).status, 200, 'the source is untouched');
  });

  test('the connection cut mid-transfer', async () => {
    const cutter = await startTcpCutter(a.port, 8_000_000);
    try {
      const ops = await startCopy('big', 'cut', { url: `https://127.0.0.1:${cutter.port}` });
      const sink = await ended(b, ops.sink);
      assert.equal(sink.status, 'Failure');
      assert.ok(cutter.cut() > 0);
      const src = await ended(a, ops.source);
      assert.equal(src.status, 'Failure');
      assert.equal((await b.api.get('/1.0/containers/cut')).status, 404);
      await clean();
    } finally {
      await cutter.close();
    }
  });

  test('a full disk on the sink', async () => {
    const ops = await startCopy('big', 'full', { pool: 'tiny' });
    const sink = await ended(b, ops.sink);
    assert.equal(sink.status, 'Failure');
    assert.match(sink.err, /space/i);
    const src = await ended(a, ops.source);
    assert.equal(src.status, 'Failure');
    assert.equal((await b.api.get('/1.0/containers/full')).status, 404);
    await clean(tiny);
    const snaps = (() => {
      try {
        return readdirSync(path.join(tiny, 'containers-snapshots'));
      } catch {
        return [];
      }
    })();
    assert.deepEqual(snaps, [], 'no snapshot of the failed copy');
  });

  test('the source deleted mid-transfer', async () => {
    const ops = await startCopy('big', 'gone');
    await flowing(ops.sink);
    const del = await a.api.delete('/1.0/containers/big');
    assert.equal(del.status, 202, del.text);
    const sink = await ended(b, ops.sink);
    assert.equal(sink.status, 'Failure');
    const src = await ended(a, ops.source);
    assert.equal(src.status, 'Failure');
    assert.equal((await b.api.get('/1.0/containers/gone')).status, 404);
    await clean();
  });
});

/**
 * btrfs send/receive over a real websocket pair between two btrfs pools on loop files (the migration's
 * host parts): snapshot streams incremental on each other, adopted as the pool's own subvolumes
 * (read-only snapshots keeping the received uuid, a writable volume), and a stream cut mid-way, whose
 * half-received subvolume removeVolume clears with the landing directory (what staging's abort and sweep run).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { runCommand } from '../../src/host/exec.ts';
import { receiveSubvolume, sendSubvolume } from '../../src/host/migration/btrfs-transfer.ts';
import { FsChannel } from '../../src/host/migration/ws-frames.ts';
import { createBtrfsDriver } from '../../src/host/storage/btrfs.ts';
import type { PoolSpec, VolumeRef } from '../../src/host/storage/types.ts';
import { eventually } from '../support/http.ts';
import { cleanupTestRoot, exists, hostSkipReason, makeTestRoot } from './storage-fixtures.ts';

const skip = await hostSkipReason();
const btrfs = createBtrfsDriver();
const streams = btrfs.subvolumeStreams!;
const show = async (p: string) => {
  const out = await runCommand('btrfs', ['subvolume', 'show', p]);
  return {
    received: /Received UUID:\s+(\S+)/.exec(out)?.[1] ?? '-',
    readonly: /Flags:\s+readonly/.test(out),
  };
};

describe('btrfs streams between two pools', { skip }, () => {
  let root = '';
  let src: PoolSpec;
  let dst: PoolSpec;
  let server: WebSocketServer;
  let a: FsChannel;
  let b: FsChannel;
  let sockets: WebSocket[] = [];
  const io = { signal: new AbortController().signal };

  before(async () => {
    root = await makeTestRoot();
    src = { name: 'src', driver: 'btrfs', config: { size: '200MiB' }, stateDir: path.join(root, 's') };
    dst = { name: 'dst', driver: 'btrfs', config: { size: '200MiB' }, stateDir: path.join(root, 'd') };
    for (const p of [src, dst]) await btrfs.ensurePool(p);
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[WebSocket]>;
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as { port: number }).port}/`);
    await once(client, 'open');
    const [peer] = await accepted;
    sockets = [client, peer];
    a = new FsChannel(client);
    b = new FsChannel(peer);
  });
  after(async () => {
    for (const s of sockets) s.terminate();
    server?.close();
    for (const p of [src, dst]) if (p) await btrfs.removePool(p).catch(() => undefined);
    await cleanupTestRoot(root);
  });

  it('two snapshots and the volume, each incremental on the one before, adopted as the pool’s own', async () => {
    const v: VolumeRef = { id: 'v1', type: 'custom' };
    await btrfs.ensureVolume(src, v, {});
    const vp = btrfs.volumePath(src, v);
    await writeFile(path.join(vp, 'f'), 'one\n');
    await btrfs.ensureSnapshot(src, { volume: v, id: 's1' });
    await writeFile(path.join(vp, 'f'), 'two\n');
    await btrfs.ensureSnapshot(src, { volume: v, id: 's2' });
    await writeFile(path.join(vp, 'f'), 'three\n');
    await btrfs.ensureSnapshot(src, { volume: v, id: 'frozen' });
    const order = ['s1', 's2', 'frozen'].map((id) => btrfs.snapshotPath(src, { volume: v, id }));

    const w: VolumeRef = { id: 'w1', type: 'custom' };
    const landing = streams.landingPath(dst, w);
    const sending = (async () => {
      for (const [i, p] of order.entries()) await sendSubvolume(a, p, order[i - 1], io);
    })();
    const got: string[] = [];
    for (const i of [0, 1, 2]) got.push(await receiveSubvolume(b, path.join(landing, String(i)), io));
    await sending;
    await streams.adoptSnapshot(dst, { volume: w, id: 'r1' }, got[0]!);
    await streams.adoptSnapshot(dst, { volume: w, id: 'r2' }, got[1]!, async (p) => {
      await writeFile(path.join(p, 'edited'), 'yes\n');
    });
    await streams.adoptVolume(dst, w, got[2]!);

    const r1 = btrfs.snapshotPath(dst, { volume: w, id: 'r1' });
    const r2 = btrfs.snapshotPath(dst, { volume: w, id: 'r2' });
    assert.equal(await readFile(path.join(r1, 'f'), 'utf8'), 'one\n');
    assert.equal(await readFile(path.join(r2, 'f'), 'utf8'), 'two\n');
    assert.equal(await readFile(path.join(r2, 'edited'), 'utf8'), 'yes\n');
    assert.equal(await readFile(path.join(btrfs.volumePath(dst, w), 'f'), 'utf8'), 'three\n');
    assert.deepEqual(await show(r1).then((s) => s.readonly), true);
    assert.match((await show(r1)).received, /^[0-9a-f-]{36}$/, 'an unedited snapshot keeps its received uuid');
    assert.equal((await show(r2)).readonly, true, 'an edited one is read-only again');
    assert.equal((await show(btrfs.volumePath(dst, w))).readonly, false, 'the volume is writable');
    assert.equal(await exists(landing), false, 'the landing directory is gone');
  });

  it('a stream cut short fails the receive; removeVolume clears the landing directory', async () => {
    const v: VolumeRef = { id: 'v2', type: 'custom' };
    await btrfs.ensureVolume(src, v, {});
    await writeFile(path.join(btrfs.volumePath(src, v), 'f'), Buffer.alloc(60 << 20, 7));
    await btrfs.ensureSnapshot(src, { volume: v, id: 'only' });
    const w: VolumeRef = { id: 'w2', type: 'custom' };
    const into = path.join(streams.landingPath(dst, w), '0');
    const sending = sendSubvolume(a, btrfs.snapshotPath(src, { volume: v, id: 'only' }), undefined, io);
    sending.catch(() => undefined);
    const receiving = receiveSubvolume(b, into, io);
    receiving.catch(() => undefined);
    // the subvolume exists from the stream's first command on: cut the socket then
    await eventually(async () => (await readdir(into).catch(() => [])).length > 0, 'the receive under way');
    sockets[0]!.terminate();
    await assert.rejects(receiving, /hung up|broke/);
    await assert.rejects(sending, /closed|broke/);
    await btrfs.removeVolume(dst, w);
    assert.equal(await exists(streams.landingPath(dst, w)), false);
  });
});

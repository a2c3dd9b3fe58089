/**
 * Broken images against the daemon as a process on real LXC: an upload cut short, or holding a
 * member GNU tar refuses, is refused with 400 and leaves nothing behind; an image file damaged on
 * disk behind svcd's back fails the create operation within seconds with tar's own message (a
 * terminal error, not retried until the operation's deadline) and leaves no half-unpacked volume.
 * `after` deletes every container, stops the daemon and removes the temp dirs, also on failure.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, truncate, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping image terminal-error e2e tests: ${skip}`);

/** A tarball built member by member (so that it can hold what GNU tar itself would never write). */
function tarball(members: { path: string; type?: string; data?: string; linkpath?: string }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const m of members) {
    const data = Buffer.from(m.data ?? '');
    const h = new Header({
      path: m.path,
      type: (m.type ?? 'File') as 'File',
      size: data.length,
      mode: 0o755,
      uid: 0,
      gid: 0,
      mtime: new Date(),
      ...(m.linkpath ? { linkpath: m.linkpath } : {}),
    });
    h.encode();
    blocks.push(h.block!);
    if (data.length) blocks.push(Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

describe('broken images: refused at upload, and a damaged stored image fails its create at once', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  const octet = { 'Content-Type': 'application/octet-stream' };

  /** Nothing of an upload is left: no image listed, no file in the image store (temporary or not). */
  async function assertNoImageLeft() {
    assert.deepEqual((await api.get('/1.0/images')).json.metadata, []);
    assert.deepEqual(await readdir(path.join(d.stateDir, 'images')).catch(() => []), []);
  }

  before(async () => {
    await ensureRootSubids();
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
  });

  after(async () => teardownContainers(d, api, [imgDir]));

  test('an upload cut short is refused with 400 naming it, and nothing is stored', async () => {
    const img = await buildBusyboxImage({ dir: path.join(imgDir, 'cut'), format: 'unified', compression: 'none' });
    assert.equal(img.format, 'unified');
    const full = await readFile(img.file);
    // Cut inside the last member's data, and (plain tar) cut at a member boundary before the end marker.
    for (const bytes of [full.subarray(0, Math.floor(full.length * 0.6)), gzipSync(full).subarray(0, 20_000)]) {
      const res = await api.post('/1.0/images', bytes, octet);
      assert.match(expectError(res, 400), /Invalid image tarball: it is cut short/);
      await assertNoImageLeft();
    }
  });

  test('an upload holding a member GNU tar refuses (or that escapes) is refused with 400, nothing stored', async () => {
    const meta = {
      path: 'metadata.yaml',
      data: `architecture: ${process.arch === 'x64' ? 'x86_64' : 'aarch64'}\ncreation_date: ${Math.floor(Date.now() / 1000)}\n`,
    };
    const cases: [Buffer, RegExp][] = [
      [
        tarball([meta, { path: 'rootfs/', type: 'Directory' }, { path: 'rootfs/../../../tmp/svcd-escape', data: 'x' }]),
        /member "rootfs\/\.\.\/\.\.\/\.\.\/tmp\/svcd-escape" contains '\.\.'/,
      ],
      [
        tarball([
          meta,
          { path: 'rootfs/', type: 'Directory' },
          { path: 'rootfs/bin/sh', type: 'Link', linkpath: 'rootfs/bin/busybox' },
        ]),
        /hard link "rootfs\/bin\/sh" points at "rootfs\/bin\/busybox", which is not an earlier file/,
      ],
      [
        tarball([
          meta,
          { path: 'rootfs/', type: 'Directory' },
          { path: 'rootfs/etc', type: 'SymbolicLink', linkpath: '/etc' },
          { path: 'rootfs/etc/passwd', data: 'x' },
        ]),
        /lies under the symbolic link "rootfs\/etc"/,
      ],
    ];
    for (const [bytes, message] of cases) {
      const res = await api.post('/1.0/images', gzipSync(bytes), octet);
      assert.match(expectError(res, 400), message);
      await assertNoImageLeft();
    }
  });

  test("an image file damaged on disk: the create fails within seconds with tar's message, no half-made volume stays", async () => {
    const img = await buildBusyboxImage({ dir: path.join(imgDir, 'good'), format: 'unified', compression: 'gzip' });
    assert.equal(img.format, 'unified');
    await waitOp(api, await api.post('/1.0/images', await readFile(img.file), octet));
    // Behind svcd's back: the stored file loses its second half.
    const stored = path.join(d.stateDir, 'images', img.fingerprint);
    await truncate(stored, Math.floor((await stat(stored)).size / 2));

    const started = Date.now();
    const res = await api.post('/1.0/containers', {
      name: 'broken1',
      source: { type: 'image', fingerprint: img.fingerprint },
    });
    assert.equal(res.status, 202, res.text);
    const op = (await api.get(`${res.json.operation}/wait?timeout=60`)).json.metadata;
    const took = Date.now() - started;
    assert.equal(op.status, 'Failure', JSON.stringify(op));
    assert.ok(took < 30_000, `the create failed after ${took} ms, not at once`);
    assert.match(
      op.err,
      new RegExp(`Failed to unpack image ${img.fingerprint}: .*tar: Unexpected EOF in archive`, 's'),
    );

    // No image volume (row or directory) on the pool, half-unpacked or not.
    const vols = (await api.get('/1.0/storage-pools/default/volumes?recursion=1')).json.metadata as {
      type: string;
      name: string;
    }[];
    assert.deepEqual(
      vols.filter((v) => v.type === 'image'),
      [],
    );
    const poolImages = path.join(d.stateDir, 'storage-pools', 'default', 'images');
    assert.deepEqual(await readdir(poolImages).catch(() => []), []);

    // Like other terminal create failures, the container row stays (stopped) and can be deleted.
    const c = await api.get('/1.0/containers/broken1');
    assert.equal(c.status, 200);
    assert.equal(c.json.metadata.status, 'Stopped');
    await waitOp(api, await api.delete('/1.0/containers/broken1'));
    assert.equal((await api.get('/1.0/containers/broken1')).status, 404);
  });
});

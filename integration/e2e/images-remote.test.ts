/**
 * Images from another svcd, through the API, with two daemons on loopback
 * (support/two-hosts.ts): host b serves the busybox test image, host a pulls it over the svc
 * protocol (b's certificate pinned). Pulls by alias, by fingerprint prefix, a private image with a
 * secret, a copy with auto_update then a refresh after b's alias moved, bad sources (400), and the
 * failure paths (wrong pinned certificate, a corrupt file on the source: hash mismatch, a connection
 * cut mid-download), each leaving nothing stored on a. How many exports b served is counted from
 * its `image-retrieved` lifecycle events.
 */
import assert from 'node:assert/strict';
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitOp } from '../support/container-env.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { sha256 } from '../support/images.ts';
import { startTcpCutter } from '../support/tcp-cutter.ts';
import { importTestImage, startSourceAndTarget, stopHosts, trustHost, type Host } from '../support/two-hosts.ts';

describe('pulling images from another svcd (svc protocol)', () => {
  let a: Host;
  let b: Host;
  let fp = '';
  const dirs: string[] = [];
  let exports: () => number;
  let closeEvents = () => {};
  const pull = (src: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    a.api.post('/1.0/images', {
      ...extra,
      source: { type: 'image', mode: 'pull', server: b.url, certificate: b.cert, ...src },
    });
  const failedOp = async (api: Client, res: { status: number; json: any; text: string }) =>
    (await waitOp(api, res, 'Failure')).err as string;
  /** Nothing of `fingerprint` on a: no row, no file, no temporary file. */
  const nothingStored = async (fingerprint: string) => {
    assert.equal((await a.api.get(`/1.0/images/${fingerprint}`)).status, 404);
    const names = await readdir(path.join(a.daemon.stateDir, 'images')).catch(() => [] as string[]);
    assert.deepEqual(
      names.filter((n) => n.startsWith(fingerprint) || n.startsWith('.tmp-')),
      [],
    );
  };

  before(async () => {
    ({
      a,
      b,
      exports,
      closeEvents,
      image: { dir: dirs[0], fingerprint: fp },
    } = await startSourceAndTarget());
  });
  after(async () => {
    closeEvents();
    await stopHosts([a, b], dirs);
  });

  test('bad sources are refused with 400 before any operation', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ server: undefined, alias: 'bb' }, /Missing "source.server"/],
      [{ alias: 'bb', fingerprint: fp }, /only one of/],
      [{}, /Missing "source.alias" or "source.fingerprint"/],
      [{ alias: 'bb', protocol: 'oci' }, /source.protocol/],
      [{ alias: 'bb', server: 'ftp://127.0.0.1/' }, /only https and http/],
    ];
    for (const [src, msg] of cases) {
      assert.match(expectError(await pull(src), 400), msg);
      assert.match(
        expectError(
          await a.api.post('/1.0/containers', {
            name: 'bad',
            source: { type: 'image', mode: 'pull', server: b.url, ...src },
          }),
          400,
        ),
        msg,
      );
    }
  });

  test("a pull by alias: the image, its properties with ours on top, aliases, update_source; the bytes are the source's", async () => {
    const before = exports();
    const op = await waitOp(
      a.api,
      await pull(
        { alias: 'bb', protocol: 'lxd' },
        { aliases: [{ name: 'here' }], properties: { extra: 'yes' }, auto_update: true },
      ),
    );
    assert.equal(op.metadata.fingerprint, fp);
    assert.match(
      op.metadata.download_progress,
      /^100% \([\d.]+[kMG]?B\/s\)$/,
      "LXD's download_progress, which lxc shows",
    );
    const img = (await a.api.get(`/1.0/images/${fp}`)).json.metadata;
    assert.equal(img.cached, false);
    assert.equal(img.auto_update, true);
    assert.equal(img.properties.os, 'busybox');
    assert.equal(img.properties.extra, 'yes');
    assert.deepEqual(
      img.aliases.map((x: any) => x.name),
      ['here'],
    );
    assert.deepEqual(img.update_source, { server: b.url, protocol: 'svc', certificate: b.cert, alias: 'bb' });
    const exported = await a.api.get(`/1.0/images/${fp}/export`);
    assert.equal(sha256(exported.body!), fp);
    assert.equal(exports() - before, 1);
    // Pulled again: nothing is downloaded, the alias is added.
    await waitOp(a.api, await pull({ alias: 'bb' }, { aliases: [{ name: 'again' }] }));
    assert.equal(exports() - before, 1);
    assert.equal((await a.api.get('/1.0/images/aliases/again')).json.metadata.target, fp);
    await waitOp(a.api, await a.api.delete(`/1.0/images/${fp}`));
  });

  test('a pull by fingerprint prefix', async () => {
    const op = await waitOp(a.api, await pull({ fingerprint: fp.slice(0, 12) }));
    assert.equal(op.metadata.fingerprint, fp);
    assert.equal((await a.api.get(`/1.0/images/${fp}`)).json.metadata.update_source.alias, fp.slice(0, 12));
    await waitOp(a.api, await a.api.delete(`/1.0/images/${fp}`));
  });

  test('a private split image: refused without a secret, pulled with the secret the client got from the source, or once the source trusts this server', async () => {
    const img = await importTestImage(b, { public: false, format: 'split', creationDate: 1_700_000_000 });
    dirs.push(img.dir);
    assert.match(await failedOp(a.api, await pull({ fingerprint: img.fingerprint })), /not found/i);
    await nothingStored(img.fingerprint);
    const secretOp = await b.api.post(`/1.0/images/${img.fingerprint}/secret`, {});
    const secret = secretOp.json.metadata.metadata.secret as string;
    await waitOp(a.api, await pull({ fingerprint: img.fingerprint, secret }));
    const got = (await a.api.get(`/1.0/images/${img.fingerprint}`)).json.metadata;
    assert.equal(got.public, false);
    assert.equal(got.fingerprint, img.fingerprint);
    const exported = await a.api.get(`/1.0/images/${img.fingerprint}/export`);
    assert.match(exported.headers['content-type'] ?? '', /^multipart\/form-data/, 'stored split, as on the source');
    await waitOp(a.api, await a.api.delete(`/1.0/images/${img.fingerprint}`));
    // a connects with its server certificate as client certificate: once b trusts it, no secret is needed.
    await trustHost(a, b);
    await waitOp(a.api, await pull({ fingerprint: img.fingerprint }));
    await waitOp(a.api, await a.api.delete(`/1.0/images/${img.fingerprint}`));
    const [cert] = (await b.api.get('/1.0/certificates')).json.metadata as string[];
    assert.ok((await b.api.delete(cert!)).status < 300);
  });

  test('a copy with auto_update, then a refresh after the source alias moved: the aliases move, the old image goes', async () => {
    await waitOp(a.api, await pull({ alias: 'bb' }, { auto_update: true, aliases: [{ name: 'mine' }] }));
    const noop = await waitOp(a.api, await a.api.post(`/1.0/images/${fp}/refresh`, {}));
    assert.equal(noop.metadata.refreshed, false);
    const next = await importTestImage(b, { public: true, creationDate: 1_600_000_000 });
    dirs.push(next.dir);
    assert.equal(
      (await b.api.put('/1.0/images/aliases/bb', { target: next.fingerprint, description: '' })).status,
      200,
    );
    const op = await waitOp(a.api, await a.api.post(`/1.0/images/${fp}/refresh`, {}));
    assert.equal(op.metadata.refreshed, true);
    assert.equal((await a.api.get('/1.0/images/aliases/mine')).json.metadata.target, next.fingerprint);
    assert.equal((await a.api.get(`/1.0/images/${fp}`)).status, 404);
    const now = (await a.api.get(`/1.0/images/${next.fingerprint}`)).json.metadata;
    assert.equal(now.auto_update, true);
    assert.equal(now.update_source.alias, 'bb');
    // Back as it was, for the other tests.
    assert.equal((await b.api.put('/1.0/images/aliases/bb', { target: fp, description: '' })).status, 200);
    await waitOp(a.api, await a.api.delete(`/1.0/images/${next.fingerprint}`));
  });

  test('a wrong pinned certificate fails the operation clearly and stores nothing', async () => {
    const err = await failedOp(a.api, await pull({ alias: 'bb', certificate: a.cert }));
    assert.match(err, /does not match the pinned certificate/);
    await nothingStored(fp);
  });

  test('a corrupt file on the source: SHA-256 mismatch, nothing stored', async () => {
    const file = path.join(b.daemon.stateDir, 'images', fp);
    const fh = await open(file, 'r+');
    const byte = Buffer.alloc(1);
    await fh.read(byte, 0, 1, 5000);
    await fh.write(Buffer.from([byte[0]! ^ 0xff]), 0, 1, 5000);
    try {
      assert.match(await failedOp(a.api, await pull({ alias: 'bb' })), /SHA-256 mismatch/);
      await nothingStored(fp);
    } finally {
      await fh.write(byte, 0, 1, 5000);
      await fh.close();
    }
  });

  test('the connection cut mid-download: the operation fails, nothing stored', async () => {
    const cutter = await startTcpCutter(b.port, 200_000);
    try {
      const err = await failedOp(a.api, await pull({ alias: 'bb', server: `https://127.0.0.1:${cutter.port}` }));
      assert.match(err, /cut short|dropped|failed after/);
      await nothingStored(fp);
      assert.ok(cutter.cut() >= 1, 'a connection was cut');
    } finally {
      await cutter.close();
    }
    // And the same pull through no cutter works.
    await waitOp(a.api, await pull({ alias: 'bb' }));
    await eventually(async () => (await a.api.get(`/1.0/images/${fp}`)).status === 200, 'the image');
    await waitOp(a.api, await a.api.delete(`/1.0/images/${fp}`));
  });
});

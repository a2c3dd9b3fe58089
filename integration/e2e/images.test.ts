import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { freePort, client, eventually, expectError, type Client, type Reply, type Target } from '../support/http.ts';
import { makeImageTree, multipartBody, parseMultipart, sha256, type ImageTree } from '../support/images.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';

const hasTool = (name: string) =>
  new Promise<boolean>((resolve) =>
    execFile(name, ['--version'], (err) => resolve(!err || typeof err.code === 'number')),
  );

/** A request whose answer body is kept as bytes (exports). */
function rawRequest(
  target: Target,
  method: string,
  urlPath: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const opts: https.RequestOptions = {
      method,
      path: urlPath,
      headers: { ...(body ? { 'Content-Length': String(body.length) } : {}), ...headers },
      ...(target.socketPath
        ? { socketPath: target.socketPath }
        : { host: target.https!.host, port: target.https!.port, rejectUnauthorized: false, agent: false }),
    };
    const req = (target.socketPath ? http : https).request(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('images: upload, list, update, export, aliases, secrets, URL import, delete', () => {
  let d: Daemon;
  let api: Client;
  let tree: ImageTree;
  let port: number;
  const imagesDir = () => path.join(d.stateDir, 'images');
  const fps: Record<string, string> = {};
  const files: Record<string, Buffer> = {};

  /** Wait for an async answer's operation to end; returns the operation. */
  const finish = async (res: Reply) => {
    assert.equal(res.status, 202, res.text);
    assert.equal(res.json.type, 'async');
    const op = await api.get(`${res.json.operation}/wait?timeout=60`);
    return op.json.metadata;
  };
  const upload = (body: Buffer, headers: Record<string, string> = {}) =>
    api.post('/1.0/images', body, { 'Content-Type': 'application/octet-stream', ...headers });
  const uploaded = async (body: Buffer, headers: Record<string, string> = {}) => {
    const op = await finish(await upload(body, headers));
    assert.equal(op.status_code, 200, op.err);
    assert.equal(typeof op.metadata.fingerprint, 'string');
    return op.metadata as { fingerprint: string; size: string };
  };
  const fingerprints = async () =>
    ((await api.get('/1.0/images')).json.metadata as string[]).map((u) => u.replace('/1.0/images/', '')).sort();

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    tree = await makeImageTree();
    port = await freePort();
    files.gz = await tree.unified('unified.tar.gz', '--gzip');
    files.plain = await tree.unified('unified.tar');
    files.xz = await tree.unified('unified.tar.xz', '--xz');
    // zstd is optional on Debian: its variant runs only where the tool is installed.
    if (await hasTool('zstd')) files.zst = await tree.unified('unified.tar.zst', '--zstd');
    files.bz2 = await tree.unified('unified.tar.bz2', '--bzip2');
    files.meta = await tree.meta('meta.tar.xz', '--xz');
    files.rootfs = await tree.rootfs('rootfs.tar.gz', '--gzip');
    files.noMeta = await tree.rootfs('nometa.tar');
    files.noRootfs = await tree.meta('norootfs.tar');
  });
  after(async () => {
    await d?.destroy();
    await tree?.cleanup();
  });

  test('unified gzip tarball, raw body: async upload whose operation carries fingerprint and size', async () => {
    const props = new URLSearchParams({ tier: 'gold', description: 'overridden' }).toString();
    const res = await upload(files.gz!, { 'X-SVC-filename': 'busybox.tar.gz', 'X-SVC-properties': props });
    const op = await finish(res);
    assert.equal(op.status_code, 200, op.err);
    assert.equal(op.metadata.fingerprint, sha256(files.gz!));
    assert.equal(Number(op.metadata.size), files.gz!.length);
    assert.deepEqual(op.resources.images, [`/1.0/images/${sha256(files.gz!)}`]);
    fps.gz = op.metadata.fingerprint;
    const img = (await api.get(`/1.0/images/${fps.gz}`)).json.metadata;
    assert.equal(img.fingerprint, fps.gz);
    assert.equal(img.filename, 'busybox.tar.gz');
    assert.equal(img.size, files.gz!.length);
    assert.equal(img.architecture, 'x86_64');
    assert.equal(img.public, false);
    assert.equal(img.cached, false);
    assert.equal(img.auto_update, false);
    assert.equal(img.type, 'container');
    assert.equal(img.update_source, null);
    assert.deepEqual(img.properties, { os: 'busybox', release: '1.0', description: 'overridden', tier: 'gold' });
    assert.deepEqual(img.aliases, []);
    assert.equal(new Date(img.created_at).getTime(), 1700000000 * 1000);
    assert.equal(img.last_used_at, '1970-01-01T00:00:00Z');
    assert.ok(Date.now() - new Date(img.uploaded_at).getTime() < 60_000);
    assert.deepEqual(await readdir(imagesDir()), [fps.gz]);
  });

  test('unified uncompressed, xz, zstd and bzip2 tarballs; X-LXD-* headers in any case; a right fingerprint header', async () => {
    fps.plain = (
      await uploaded(files.plain!, { 'X-Lxd-Fingerprint': sha256(files.plain!), 'x-lxd-public': 'true' })
    ).fingerprint;
    assert.equal((await api.get(`/1.0/images/${fps.plain}`)).json.metadata.public, true);
    for (const k of ['xz', 'zst', 'bz2']) if (files[k]) fps[k] = (await uploaded(files[k]!)).fingerprint;
    assert.equal(fps.xz, sha256(files.xz!));
  });

  test('split image by multipart/form-data (metadata + rootfs): fingerprint over both, two files stored', async () => {
    const { body, contentType } = multipartBody([
      ['metadata', 'meta.tar.xz', files.meta!],
      ['rootfs', 'rootfs.tar.gz', files.rootfs!],
    ]);
    const fp = sha256(files.meta!, files.rootfs!);
    const op = await finish(
      await api.post('/1.0/images', body, { 'Content-Type': contentType, 'X-SVC-fingerprint': fp }),
    );
    assert.equal(op.status_code, 200, op.err);
    assert.equal(op.metadata.fingerprint, fp);
    fps.split = fp;
    const img = (await api.get(`/1.0/images/${fp}`)).json.metadata;
    assert.equal(img.size, files.meta!.length + files.rootfs!.length);
    assert.equal(img.filename, 'rootfs.tar.gz', 'the rootfs part names the image, as in LXD');
    assert.ok((await readdir(imagesDir())).includes(`${fp}.rootfs`));
  });

  test('split image with a squashfs rootfs', async (t) => {
    const sq = await tree.squashfs('rootfs.squashfs');
    if (!sq) return t.skip('mksquashfs (squashfs-tools) is not installed');
    const { body, contentType } = multipartBody([
      ['metadata', 'meta.tar.xz', files.meta!],
      ['rootfs', 'rootfs.squashfs', sq],
    ]);
    fps.squash = (await uploaded(body, { 'Content-Type': contentType })).fingerprint;
    assert.equal(fps.squash, sha256(files.meta!, sq));
  });

  test('refused uploads store nothing: fingerprint mismatch, garbage, no metadata.yaml, no rootfs/, bad parts, duplicate', async () => {
    const before = await fingerprints();
    const onDisk = (await readdir(imagesDir())).sort();
    const other = await tree.unified('other.tar', '--xz');
    expectError(await upload(other, { 'X-SVC-fingerprint': 'ab'.repeat(32) }), 400);
    expectError(await upload(Buffer.from('this is not a tarball at all, just garbage bytes\n'.repeat(40))), 400);
    expectError(await upload(Buffer.alloc(0)), 400);
    assert.match(expectError(await upload(files.noMeta!), 400), /metadata\.yaml/);
    assert.match(expectError(await upload(files.noRootfs!), 400), /rootfs/);
    const wrongParts = multipartBody([
      ['rootfs', 'r', files.rootfs!],
      ['metadata', 'm', files.meta!],
    ]);
    expectError(await api.post('/1.0/images', wrongParts.body, { 'Content-Type': wrongParts.contentType }), 400);
    // Refused at its first part header: the 24 MiB that follow are read and dropped, the answer still arrives.
    const bigWrong = multipartBody([
      ['rootfs', 'r', Buffer.alloc(24 * 1024 * 1024, 7)],
      ['metadata', 'm', files.meta!],
    ]);
    expectError(await api.post('/1.0/images', bigWrong.body, { 'Content-Type': bigWrong.contentType }), 400);
    assert.equal((await api.get('/1.0')).status, 200, 'the daemon still answers');
    expectError(
      await api.post('/1.0/images', { source: { type: 'image' } }, { 'Content-Type': 'application/json' }),
      400,
    );
    expectError(await api.post('/1.0/images', files.gz!, { 'Content-Type': 'multipart/form-data' }), 400);
    const garbageRootfs = multipartBody([
      ['metadata', 'm', files.meta!],
      ['rootfs', 'r', Buffer.from('x'.repeat(2000))],
    ]);
    expectError(await api.post('/1.0/images', garbageRootfs.body, { 'Content-Type': garbageRootfs.contentType }), 400);
    const truncated = multipartBody([
      ['metadata', 'm', files.meta!],
      ['rootfs', 'r', files.rootfs!],
    ]);
    expectError(
      await api.post('/1.0/images', truncated.body.subarray(0, truncated.body.length - 20), {
        'Content-Type': truncated.contentType,
      }),
      400,
    );
    expectError(await upload(files.gz!, { 'X-SVC-properties': 'a=1&a=2' }), 400);
    assert.match(expectError(await upload(files.gz!), 409), /already exists/);
    assert.deepEqual(await fingerprints(), before, 'no image row was added');
    assert.deepEqual((await readdir(imagesDir())).sort(), onDisk, 'no file was left in the images directory');
    // Bad pull sources are refused before any connection (the pulls themselves: images-remote.test.ts).
    expectError(
      await api.post('/1.0/images', {
        source: { type: 'image', alias: 'x', server: 'https://127.0.0.1:1', protocol: 'oci' },
      }),
      400,
    );
    expectError(
      await api.post('/1.0/images', {
        source: { type: 'image', mode: 'push', alias: 'x', server: 'https://127.0.0.1:1' },
      }),
      400,
    );
    expectError(await api.post('/1.0/images', {}), 400);
  });

  test('list, recursion, filter, get by unique prefix; unknown or ambiguous prefixes', async () => {
    const urls = (await api.get('/1.0/images')).json.metadata as string[];
    assert.ok(urls.includes(`/1.0/images/${fps.gz}`));
    const objs = (await api.get('/1.0/images?recursion=1')).json.metadata as { fingerprint: string }[];
    assert.deepEqual(objs.map((o) => o.fingerprint).sort(), await fingerprints());
    const pub = (await api.get(`/1.0/images?recursion=1&filter=${encodeURIComponent('public eq true')}`)).json.metadata;
    assert.deepEqual(
      pub.map((o: { fingerprint: string }) => o.fingerprint),
      [fps.plain],
    );
    const tiered = (await api.get(`/1.0/images?filter=${encodeURIComponent('properties.tier eq GOLD')}`)).json.metadata;
    assert.deepEqual(tiered, [`/1.0/images/${fps.gz}`]);
    const got = await api.get(`/1.0/images/${fps.gz!.slice(0, 12)}`);
    assert.equal(got.json.metadata.fingerprint, fps.gz);
    assert.match(got.headers.etag ?? '', /^"[0-9a-f]{64}"$/);
    expectError(await api.get(`/1.0/images/${'0'.repeat(64)}`), 404);
    expectError(await api.get('/1.0/images/not-hex'), 404);
    const all = await fingerprints();
    const common = all.find((a) => all.some((b) => b !== a && b[0] === a[0]));
    if (common) expectError(await api.get(`/1.0/images/${common[0]}`), 400);
  });

  test('PUT replaces and PATCH merges {auto_update, properties, public}, with ETag (stale → 412)', async () => {
    const url = `/1.0/images/${fps.xz}`;
    const etag = (await api.get(url)).headers.etag!;
    assert.equal(
      (await api.patch(url, { properties: { extra: 'x', os: '' }, public: true }, { 'If-Match': etag })).status,
      200,
    );
    const patched = await api.get(url);
    assert.deepEqual(patched.json.metadata.properties, { release: '1.0', description: 'svcd test image', extra: 'x' });
    assert.equal(patched.json.metadata.public, true);
    expectError(await api.put(url, { properties: {} }, { 'If-Match': etag }), 412);
    assert.equal(
      (await api.put(url, { auto_update: true, properties: { only: 'this' } }, { 'If-Match': patched.headers.etag! }))
        .status,
      200,
    );
    const put = (await api.get(url)).json.metadata;
    assert.deepEqual(put.properties, { only: 'this' });
    assert.equal(put.auto_update, true);
    assert.equal(put.public, false, 'PUT resets what it does not name');
    expectError(await api.patch(url, { public: 'yes' }), 400);
  });

  test('export sends back the uploaded bytes: unified with Content-Disposition, split as multipart parts', async () => {
    const uni = await rawRequest({ socketPath: d.socketPath }, 'GET', `/1.0/images/${fps.gz}/export`);
    assert.equal(uni.status, 200);
    assert.equal(sha256(uni.body), fps.gz);
    assert.equal(uni.headers['content-disposition'], 'attachment; filename=busybox.tar.gz');
    const plain = await rawRequest({ socketPath: d.socketPath }, 'GET', `/1.0/images/${fps.plain}/export`);
    assert.equal(plain.headers['content-disposition'], `attachment; filename=${fps.plain}.tar`);
    assert.ok(plain.body.equals(files.plain!));
    const split = await rawRequest({ socketPath: d.socketPath }, 'GET', `/1.0/images/${fps.split}/export`);
    assert.match(split.headers['content-type'] ?? '', /^multipart\/form-data; boundary=/);
    assert.equal(Number(split.headers['content-length']), split.body.length);
    const parts = parseMultipart(split.body, split.headers['content-type']!);
    assert.deepEqual(
      parts.map((p) => [p.name, p.filename]),
      [
        ['metadata', `meta-${fps.split}.tar.xz`],
        ['rootfs', `${fps.split}.tar.gz`],
      ],
    );
    assert.equal(sha256(parts[0]!.data, parts[1]!.data), fps.split);
    assert.ok(parts[1]!.data.equals(files.rootfs!));
  });

  test('aliases: create (409 when taken, 404 for a missing target), get with ETag, PUT/PATCH, rename (409), delete', async () => {
    const created = await api.post('/1.0/images/aliases', {
      name: 'bb',
      target: fps.gz,
      description: 'busybox',
      type: '',
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.location, '/1.0/images/aliases/bb');
    expectError(await api.post('/1.0/images/aliases', { name: 'bb', target: fps.plain }), 409);
    expectError(await api.post('/1.0/images/aliases', { name: 'ghost', target: 'f'.repeat(64) }), 404);
    expectError(await api.post('/1.0/images/aliases', { name: 'bad name', target: fps.gz }), 400);
    assert.equal(
      (await api.post('/1.0/images/aliases', { name: 'short', target: fps.plain!.slice(0, 10) })).status,
      200,
    );
    assert.equal(
      (await api.get('/1.0/images/aliases/short')).json.metadata.target,
      fps.plain,
      'a prefix target is stored in full',
    );
    const got = await api.get('/1.0/images/aliases/bb');
    assert.deepEqual(got.json.metadata, { name: 'bb', description: 'busybox', target: fps.gz, type: 'container' });
    assert.deepEqual((await api.get('/1.0/images/aliases')).json.metadata, [
      '/1.0/images/aliases/bb',
      '/1.0/images/aliases/short',
    ]);
    assert.deepEqual((await api.get(`/1.0/images/${fps.gz}`)).json.metadata.aliases, [
      { name: 'bb', description: 'busybox' },
    ]);
    assert.equal(
      (await api.patch('/1.0/images/aliases/bb', { description: 'bb v2' }, { 'If-Match': got.headers.etag! })).status,
      200,
    );
    expectError(await api.put('/1.0/images/aliases/bb', { target: fps.plain }, { 'If-Match': got.headers.etag! }), 412);
    expectError(await api.put('/1.0/images/aliases/bb', { description: 'no target' }), 400);
    assert.equal((await api.put('/1.0/images/aliases/bb', { target: fps.xz })).status, 200);
    assert.deepEqual((await api.get('/1.0/images/aliases/bb')).json.metadata, {
      name: 'bb',
      description: '',
      target: fps.xz,
      type: 'container',
    });
    const renamed = await api.post('/1.0/images/aliases/bb', { name: 'busy' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.headers.location, '/1.0/images/aliases/busy');
    expectError(await api.get('/1.0/images/aliases/bb'), 404);
    expectError(await api.post('/1.0/images/aliases/busy', { name: 'short' }), 409);
    expectError(await api.post('/1.0/images/aliases/missing', { name: 'x' }), 404);
    const recursive = (await api.get('/1.0/images/aliases?recursion=1')).json.metadata;
    assert.deepEqual(
      recursive.map((a: { name: string }) => a.name),
      ['busy', 'short'],
    );
    assert.equal((await api.delete('/1.0/images/aliases/short')).status, 200);
    expectError(await api.delete('/1.0/images/aliases/short'), 404);
  });

  test('guests over HTTPS see public images only; a secret opens one private image until 5 s after its first use', async () => {
    assert.equal((await api.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port}` } })).status, 200);
    const guestTarget: Target = { https: { host: '127.0.0.1', port } };
    const guest = client(guestTarget);
    await api.post('/1.0/images/aliases', { name: 'pub', target: fps.plain });
    await api.post('/1.0/images/aliases', { name: 'priv', target: fps.gz });
    assert.deepEqual((await guest.get('/1.0/images')).json.metadata, [`/1.0/images/${fps.plain}`]);
    assert.equal((await guest.get(`/1.0/images/${fps.plain}`)).status, 200);
    expectError(await guest.get(`/1.0/images/${fps.gz}`), 404);
    expectError(await guest.get(`/1.0/images/${fps.gz}/export`), 404);
    assert.deepEqual((await guest.get('/1.0/images/aliases')).json.metadata, ['/1.0/images/aliases/pub']);
    expectError(await guest.get('/1.0/images/aliases/priv'), 404);
    expectError(await guest.patch(`/1.0/images/${fps.plain}`, { public: false }), 403);
    expectError(await guest.delete(`/1.0/images/${fps.plain}`), 403);
    expectError(await guest.post('/1.0/images', files.gz), 403);
    expectError(await guest.post('/1.0/images/aliases', { name: 'x', target: fps.plain }), 403);
    const pubExport = await rawRequest(guestTarget, 'GET', `/1.0/images/${fps.plain}/export`);
    assert.equal(sha256(pubExport.body), fps.plain);

    const secretOp = await api.post(`/1.0/images/${fps.gz}/secret`, {});
    assert.equal(secretOp.status, 202, secretOp.text);
    const secret = secretOp.json.metadata.metadata.secret as string;
    assert.match(secret, /^[0-9a-f]{64}$/);
    expectError(await guest.get(`/1.0/images/${fps.gz}?secret=wrong`), 404);
    expectError(await guest.get(`/1.0/images/${fps.xz}?secret=${secret}`), 404);
    const firstUse = Date.now();
    const seen = await guest.get(`/1.0/images/${fps.gz}?secret=${secret}`);
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.json.metadata.fingerprint, fps.gz);
    const exported = await rawRequest(guestTarget, 'GET', `/1.0/images/${fps.gz}/export?secret=${secret}`);
    assert.equal(exported.status, 200);
    assert.equal(sha256(exported.body), fps.gz);
    await eventually(
      async () => (await guest.get(`/1.0/images/${fps.gz}?secret=${secret}`)).status === 404,
      'the secret to expire',
      8_000,
    );
    const elapsed = Date.now() - firstUse;
    assert.ok(elapsed >= 4_900, `the secret stayed valid 5 s after its first use (expired after ${elapsed} ms)`);
    const op = (await api.get(`${secretOp.json.operation}`)).json.metadata;
    assert.equal(op.status_code, 200, 'the token operation ends once the secret is used up');
    assert.equal(op.class, 'token');
  });

  test('URL import (LXD-Image-URL / LXD-Image-Hash) with aliases on create (image_create_aliases)', async () => {
    const fresh = await makeImageTree({ extra: 'url' });
    const body = await fresh.unified('served.tar.gz', '--gzip');
    await fresh.cleanup();
    const fp = sha256(body);
    let headSeen: http.IncomingHttpHeaders | undefined;
    let hash = fp;
    const srv = http.createServer((req, res) => {
      if (req.url === '/image' && req.method === 'HEAD') {
        headSeen = req.headers;
        res.writeHead(200, {
          'LXD-Image-Hash': hash,
          'LXD-Image-URL': `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}/files/served.tar.gz`,
        });
        return res.end();
      }
      if (req.url === '/files/served.tar.gz') {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': body.length });
        return res.end(body);
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}/image`;
    try {
      hash = 'c'.repeat(64);
      const bad = await finish(await api.post('/1.0/images', { source: { type: 'url', url } }));
      assert.equal(bad.status_code, 400);
      assert.match(bad.err, /[Hh]ash mismatch/);
      assert.ok(
        !(await readdir(imagesDir())).some((f) => f.startsWith(fp) || f.startsWith('.tmp')),
        'nothing stored after a hash mismatch',
      );
      hash = fp;
      const op = await finish(
        await api.post('/1.0/images', {
          source: { type: 'url', url, mode: 'pull' },
          public: true,
          filename: 'served.tar.gz',
          properties: { origin: 'web' },
          aliases: [{ name: 'from-url', description: 'downloaded' }],
        }),
      );
      assert.equal(op.status_code, 200, op.err);
      assert.equal(op.metadata.fingerprint, fp);
      assert.ok(headSeen?.['lxd-server-architectures']?.includes('x86_64'));
      const img = (await api.get(`/1.0/images/${fp}`)).json.metadata;
      assert.equal(img.public, true);
      assert.equal(img.filename, 'served.tar.gz');
      assert.equal(img.properties.origin, 'web');
      assert.deepEqual(img.aliases, [{ name: 'from-url', description: 'downloaded' }]);
      assert.equal((await api.get('/1.0/images/aliases/from-url')).json.metadata.target, fp);
      fps.url = fp;
      expectError(await api.post('/1.0/images', { source: { type: 'url', url: 'ftp://127.0.0.1/x' } }), 400);
      const missing = await finish(
        await api.post('/1.0/images', { source: { type: 'url', url: url.replace('/image', '/nothing') } }),
      );
      assert.equal(missing.status_code, 400);
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });

  test('projects: features.images=false shares default images; another project keeps its own rows over shared files', async () => {
    assert.equal(
      (await api.post('/1.0/projects', { name: 'shared', config: { 'features.images': 'false' } })).status,
      200,
    );
    assert.deepEqual((await api.get('/1.0/images?project=shared')).json.metadata.length, (await fingerprints()).length);
    assert.equal((await api.post('/1.0/projects', { name: 'own' })).status, 200);
    assert.deepEqual((await api.get('/1.0/images?project=own')).json.metadata, []);
    const op = await finish(
      await api.post('/1.0/images?project=own', files.bz2!, { 'Content-Type': 'application/octet-stream' }),
    );
    assert.equal(op.status_code, 200, op.err);
    assert.deepEqual((await api.get('/1.0/images?project=own')).json.metadata, [`/1.0/images/${fps.bz2}?project=own`]);
    const del = await finish(await api.delete(`/1.0/images/${fps.bz2}`));
    assert.equal(del.status_code, 200);
    assert.ok((await readdir(imagesDir())).includes(fps.bz2!), 'project "own" still has the files');
    const del2 = await finish(await api.delete(`/1.0/images/${fps.bz2}?project=own`));
    assert.equal(del2.status_code, 200);
    assert.ok(!(await readdir(imagesDir())).includes(fps.bz2!), 'files removed with the last row');
  });

  test('delete is async and removes the files, the row and the aliases pointing at it', async () => {
    await api.post('/1.0/images/aliases', { name: 'doomed', target: fps.split });
    const res = await api.delete(`/1.0/images/${fps.split}`);
    const op = await finish(res);
    assert.equal(op.status_code, 200, op.err);
    expectError(await api.get(`/1.0/images/${fps.split}`), 404);
    expectError(await api.get('/1.0/images/aliases/doomed'), 404);
    const left = await readdir(imagesDir());
    assert.ok(!left.includes(fps.split!) && !left.includes(`${fps.split}.rootfs`));
    expectError(await api.delete(`/1.0/images/${fps.split}`), 404);
  });
});

describe('images with the real lxc CLI (5.0.2)', () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  let tree: ImageTree;
  let out: string;

  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
    tree = await makeImageTree({ description: 'cli image' });
    out = await mkdtemp(path.join(os.tmpdir(), 'svcd-export-'));
  });
  after(async () => {
    await d?.destroy();
    await lxc?.cleanup();
    await tree?.cleanup();
    if (out) await rm(out, { recursive: true, force: true });
  });

  test('lxc image import (unified and split) --alias, list, info, alias list/create/rename/delete, export (hash checked), delete', async () => {
    const unified = await tree.unified('cli.tar.gz', '--gzip');
    const meta = await tree.meta('cli-meta.tar.xz', '--xz');
    const rootfs = await tree.rootfs('cli-rootfs.tar');
    const fpU = sha256(unified);
    const fpS = sha256(meta, rootfs);
    assert.match(
      await lxc.ok(['image', 'import', path.join(tree.dir, 'cli.tar.gz'), '--alias', 'cli-uni']),
      new RegExp(fpU),
    );
    await lxc.ok([
      'image',
      'import',
      path.join(tree.dir, 'cli-meta.tar.xz'),
      path.join(tree.dir, 'cli-rootfs.tar'),
      '--alias',
      'cli-split',
      '--public',
      '--quiet',
    ]);
    assert.match(await lxc.fail(['image', 'import', path.join(tree.dir, 'cli.tar.gz')]), /already exists/);

    const list = JSON.parse(await lxc.ok(['image', 'list', '--format', 'json'])) as {
      fingerprint: string;
      aliases: { name: string }[];
      public: boolean;
    }[];
    assert.deepEqual(
      list.map((i) => [i.fingerprint, i.aliases.map((a) => a.name), i.public]).sort(),
      [
        [fpU, ['cli-uni'], false],
        [fpS, ['cli-split'], true],
      ].sort(),
    );
    assert.match(await lxc.ok(['image', 'list']), /cli image/);
    assert.match(await lxc.ok(['image', 'info', 'cli-uni']), new RegExp(`Fingerprint: ${fpU}`));

    await lxc.ok(['image', 'alias', 'create', 'cli-extra', fpU.slice(0, 12)]);
    assert.match(await lxc.fail(['image', 'alias', 'create', 'cli-extra', fpS]), /already exists/);
    await lxc.ok(['image', 'alias', 'rename', 'cli-extra', 'cli-extra2']);
    const aliases = JSON.parse(await lxc.ok(['image', 'alias', 'list', '--format', 'json'])) as {
      name: string;
      target: string;
    }[];
    assert.deepEqual(aliases.map((a) => [a.name, a.target]).sort(), [
      ['cli-extra2', fpU],
      ['cli-split', fpS],
      ['cli-uni', fpU],
    ]);
    await lxc.ok(['image', 'alias', 'delete', 'cli-extra2']);
    expectError(await api.get('/1.0/images/aliases/cli-extra2'), 404);

    await lxc.ok(['image', 'export', 'cli-uni', out, '--quiet']);
    await lxc.ok(['image', 'export', 'cli-split', out, '--quiet']);
    const exported = (await readdir(out)).sort();
    assert.deepEqual(exported, [`${fpS}.tar`, `meta-${fpS}.tar.xz`, 'cli.tar.gz'].sort());
    assert.equal(sha256(await readFile(path.join(out, 'cli.tar.gz'))), fpU);
    assert.equal(
      sha256(await readFile(path.join(out, `meta-${fpS}.tar.xz`)), await readFile(path.join(out, `${fpS}.tar`))),
      fpS,
    );

    await lxc.ok(['image', 'delete', 'cli-uni']);
    await lxc.ok(['image', 'delete', fpS.slice(0, 12)]);
    assert.deepEqual((await api.get('/1.0/images')).json.metadata, []);
    assert.deepEqual((await api.get('/1.0/images/aliases')).json.metadata, []);
    assert.deepEqual(await readdir(path.join(d.stateDir, 'images')), []);
  });
});

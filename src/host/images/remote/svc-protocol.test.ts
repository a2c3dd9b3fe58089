import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { generateCertificate } from '../../../tls/ensure-server-certificate.ts';
import { createSvcProtocol } from './svc-protocol.ts';

const sha = (...b: Buffer[]) => {
  const h = createHash('sha256');
  for (const x of b) h.update(x);
  return h.digest('hex');
};
const unified = Buffer.alloc(300_000, 7);
const meta = Buffer.from('metadata bytes');
const rootfs = Buffer.alloc(200_000, 3);
const fpUnified = sha(unified);
const fpSplit = sha(meta, rootfs);
const image = (fingerprint: string, extra = {}) => ({
  type: 'sync',
  metadata: {
    fingerprint,
    architecture: 'x86_64',
    public: true,
    properties: { os: 'x' },
    aliases: [],
    filename: 'f.tar.gz',
    size: 1,
    ...extra,
  },
});

let server: https.Server;
let serverCert: { cert: string; key: string };
let otherCert: { cert: string; key: string };
let base = '';
let dir = '';
const seen: { path: string; clientCert: boolean }[] = [];

before(async () => {
  [serverCert, otherCert] = await Promise.all([
    generateCertificate('remote', { serverAuth: true }),
    generateCertificate('other', { serverAuth: true }),
  ]);
  dir = await mkdtemp(path.join(os.tmpdir(), 'svc-proto-'));
  server = https.createServer({ ...serverCert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const url = new URL(req.url!, 'https://x');
    seen.push({ path: req.url!, clientCert: !!(req.socket as import('node:tls').TLSSocket).getPeerCertificate()?.raw });
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/1.0/images/aliases/bb')
      return json(200, { type: 'sync', metadata: { name: 'bb', target: fpUnified } });
    if (url.pathname.startsWith('/1.0/images/aliases/'))
      return json(404, { type: 'error', error: 'Image alias not found', error_code: 404 });
    if (url.pathname === `/1.0/images/${fpUnified.slice(0, 8)}` || url.pathname === `/1.0/images/${fpUnified}`)
      return json(200, image(fpUnified));
    if (url.pathname === `/1.0/images/${fpSplit}`)
      return json(
        200,
        url.searchParams.get('secret') === 's3'
          ? image(fpSplit, { public: false })
          : { type: 'error', error: 'Image not found', error_code: 404 },
      );
    if (url.pathname === `/1.0/images/${fpUnified}/export`)
      return res.writeHead(200, { 'Content-Length': unified.length }).end(unified);
    if (url.pathname === `/1.0/images/${'f'.repeat(64)}/export`)
      return res.writeHead(200, { 'Content-Length': unified.length }).end(unified);
    if (url.pathname === `/1.0/images/${'e'.repeat(64)}/export`) {
      res.writeHead(200, { 'Content-Length': unified.length });
      res.write(unified.subarray(0, 1000));
      return setTimeout(() => res.destroy(), 20);
    }
    if (url.pathname === `/1.0/images/${fpSplit}/export`) {
      const b = 'XyZbOuNdArY';
      const body = Buffer.concat([
        Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="metadata"; filename="m.tar"\r\n\r\n`),
        meta,
        Buffer.from(`\r\n--${b}\r\nContent-Disposition: form-data; name="rootfs"; filename="r.tar"\r\n\r\n`),
        rootfs,
        Buffer.from(`\r\n--${b}--\r\n`),
      ]);
      return res
        .writeHead(200, { 'Content-Type': `multipart/form-data; boundary=${b}`, 'Content-Length': body.length })
        .end(body);
    }
    json(404, { type: 'error', error: 'not found', error_code: 404 });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

const signal = new AbortController().signal;
const proto = () => createSvcProtocol({ clientCert: otherCert });
const files = (name: string) => ({ meta: path.join(dir, `${name}.meta`), rootfs: path.join(dir, `${name}.rootfs`) });

test('an alias resolves to the image, with this server certificate as TLS client certificate; pinned by the server certificate', async () => {
  seen.length = 0;
  const info = await proto().resolve(
    { server: base, protocol: 'svc', alias: 'bb', certificate: serverCert.cert },
    ['x86_64'],
    signal,
  );
  assert.equal(info.fingerprint, fpUnified);
  assert.deepEqual(info.properties, { os: 'x' });
  assert.deepEqual(
    seen.map((s) => s.path),
    ['/1.0/images/aliases/bb', `/1.0/images/${fpUnified}`],
  );
  assert.ok(seen.every((s) => s.clientCert));
});

test('a fingerprint prefix (or an alias given as fingerprint, as lxc sends) is resolved; another architecture is refused', async () => {
  const p = proto();
  assert.equal(
    (
      await p.resolve(
        { server: base, protocol: 'svc', fingerprint: fpUnified.slice(0, 8), certificate: serverCert.cert },
        ['x86_64'],
        signal,
      )
    ).fingerprint,
    fpUnified,
  );
  assert.equal(
    (
      await p.resolve(
        { server: base, protocol: 'svc', fingerprint: 'bb', certificate: serverCert.cert },
        ['x86_64'],
        signal,
      )
    ).fingerprint,
    fpUnified,
  );
  await assert.rejects(
    p.resolve({ server: base, protocol: 'svc', alias: 'bb', certificate: serverCert.cert }, ['aarch64'], signal),
    /is for x86_64/,
  );
  await assert.rejects(
    p.resolve({ server: base, protocol: 'svc', alias: 'nope', certificate: serverCert.cert }, ['x86_64'], signal),
    /Image alias "nope".*not found/,
  );
});

test('a wrong pinned certificate, or no pin on a self-signed server, is refused before any request', async () => {
  seen.length = 0;
  await assert.rejects(
    proto().resolve({ server: base, protocol: 'svc', alias: 'bb', certificate: otherCert.cert }, ['x86_64'], signal),
    /does not match the pinned certificate/,
  );
  await assert.rejects(
    proto().resolve({ server: base, protocol: 'svc', alias: 'bb' }, ['x86_64'], signal),
    /is not trusted by the system CA roots/,
  );
  assert.equal(seen.length, 0);
});

test('a unified export is streamed to disk and hashed; progress is reported', async () => {
  const into = files('u');
  const calls: number[] = [];
  const info = await proto().resolve(
    { server: base, protocol: 'svc', alias: 'bb', certificate: serverCert.cert },
    [],
    signal,
  );
  await proto().download(
    { server: base, protocol: 'svc', alias: 'bb', certificate: serverCert.cert },
    info,
    into,
    (r, t) => calls.push(r / t),
    signal,
  );
  assert.ok((await readFile(into.meta)).equals(unified));
  await assert.rejects(stat(into.rootfs), /ENOENT/);
  assert.equal(calls.at(-1), 1);
});

test('a private split image with a secret: multipart parts to the two files, fingerprint over both', async () => {
  const src = {
    server: base,
    protocol: 'svc' as const,
    fingerprint: fpSplit,
    secret: 's3',
    certificate: serverCert.cert,
  };
  const info = await proto().resolve(src, [], signal);
  assert.equal(info.public, false);
  const into = files('s');
  await proto().download(src, info, into, () => {}, signal);
  assert.ok((await readFile(into.meta)).equals(meta));
  assert.ok((await readFile(into.rootfs)).equals(rootfs));
  await assert.rejects(proto().resolve({ ...src, secret: 'wrong' }, [], signal), /not found/);
});

test('a hash mismatch and a dropped connection fail with a clear message', async () => {
  const src = { server: base, protocol: 'svc' as const, certificate: serverCert.cert };
  const info = {
    fingerprint: 'f'.repeat(64),
    architecture: 'x86_64',
    public: true,
    properties: {},
    aliases: [],
    filename: '',
    split: false,
    size: 0,
  };
  await assert.rejects(
    proto().download(src, info, files('bad'), () => {}, signal),
    /SHA-256 mismatch/,
  );
  await assert.rejects(
    proto().download(src, { ...info, fingerprint: 'e'.repeat(64) }, files('cut'), () => {}, signal),
    /cut short|connection was dropped|failed after/,
  );
});

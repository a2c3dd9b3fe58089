import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import tls from 'node:tls';
import { certificateConfig, ensureServerCertificate, generateCertificate } from './ensure-server-certificate.ts';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

test('a server certificate: self-signed ECDSA P-384, ten years, serverAuth, named for its host, localhost and loopback; its key matches', async () => {
  const { cert, key } = await generateCertificate('root@box1', { serverAuth: true });
  const x = new X509Certificate(cert);
  assert.match(x.subject, /^O=svcd\nCN=root@box1$/);
  assert.equal(x.issuer, x.subject, 'self-signed');
  assert.ok(x.verify(x.publicKey), 'signed by its own key');
  assert.equal(x.publicKey.asymmetricKeyDetails?.namedCurve, 'secp384r1');
  assert.ok(x.checkPrivateKey(createPrivateKey(key)), "the key is the certificate's");
  assert.match(key, /^-----BEGIN PRIVATE KEY-----\n/, 'PKCS#8');
  assert.equal(x.ca, false);
  assert.deepEqual(x.keyUsage, [SERVER_AUTH]);
  assert.equal(x.subjectAltName, 'DNS:box1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
  const years = (Date.parse(x.validTo) - Date.parse(x.validFrom)) / (365 * 24 * 3600 * 1000);
  assert.ok(years > 9.9 && years < 10.1, `valid ${years} years`);
  assert.ok(Date.parse(x.validFrom) <= Date.now(), 'valid now');
});

test('a client certificate: clientAuth, no alternative names', async () => {
  const x = new X509Certificate((await generateCertificate('alice', { serverAuth: false })).cert);
  assert.deepEqual(x.keyUsage, [CLIENT_AUTH]);
  assert.equal(x.subjectAltName, undefined);
  assert.match(x.subject, /CN=alice$/);
});

test("a name cannot add lines or values to openssl's config", async () => {
  const config = certificateConfig('x\nsubjectAltName = DNS:evil, CN=y', { serverAuth: false });
  assert.ok(
    !/evil/.test(
      config
        .split('\n')
        .filter((l) => l.startsWith('subjectAltName'))
        .join(''),
    ),
    config,
  );
  assert.equal(config.split('\n').filter((l) => l.startsWith('CN =')).length, 1);
  const x = new X509Certificate(
    (await generateCertificate('x\nsubjectAltName = DNS:evil, CN=y', { serverAuth: false })).cert,
  );
  assert.equal(x.subjectAltName, undefined);
  assert.match(x.subject, /\nCN=x_subjectAltName___DNS:evil__CN_y$/);
});

test('ensureServerCertificate: made once (key 0600), the same afterwards, its fingerprint the SHA-256 of its DER; a TLS client trusting it reaches localhost', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-cert-'));
  dirs.push(dir);
  const first = await ensureServerCertificate(dir);
  assert.equal((await stat(path.join(dir, 'server.key'))).mode & 0o777, 0o600);
  assert.equal(await readFile(path.join(dir, 'server.crt'), 'utf8'), first.cert);
  assert.equal(first.fingerprint, new X509Certificate(first.cert).fingerprint256.replaceAll(':', '').toLowerCase());
  assert.deepEqual(await ensureServerCertificate(dir), first, 'read back, not made again');

  const server = tls.createServer({ cert: first.cert, key: first.key }, (s) => s.end('hello'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const port = (server.address() as { port: number }).port;
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: first.cert });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await once(socket, 'end');
    assert.equal(Buffer.concat(chunks).toString(), 'hello', 'the handshake verified the chain and the name');
  } finally {
    server.close();
  }
});

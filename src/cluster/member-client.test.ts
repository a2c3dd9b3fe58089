import assert from 'node:assert/strict';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { generateCertificate } from '../tls/ensure-server-certificate.ts';
import { fingerprintOfPem } from './cluster-certificate.ts';
import { MemberNotReached, requestMember } from './member-client.ts';

/**
 * Requests between members: kept connections (one TLS handshake for many requests), the pin checked on every
 * new connection, and a member never reached told apart from one that failed after it was reached.
 */
let cert: { cert: string; key: string };
let pin: string;
let server: https.Server;
let address: string;
/** Connections the server accepted. */
let accepted = 0;
before(async () => {
  cert = await generateCertificate('cluster', { serverAuth: true });
  pin = fingerprintOfPem(cert.cert);
  server = https.createServer({ cert: cert.cert, key: cert.key, requestCert: true, rejectUnauthorized: false });
  server.on('secureConnection', () => accepted++);
  server.on('request', (req, res) => {
    if (req.url === '/hang-up') return req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => res.end(JSON.stringify({ url: req.url, body: Buffer.concat(chunks).toString() })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const call = (path: string, opts: { pin?: string; address?: string; body?: string } = {}) =>
  requestMember({
    address: opts.address ?? address,
    pin: opts.pin ?? pin,
    client: cert,
    method: opts.body ? 'POST' : 'GET',
    path,
    body: opts.body ? Buffer.from(opts.body) : undefined,
  });

test('requests one after another share one connection; bodies and answers pass whole', async () => {
  const before = accepted;
  for (let i = 0; i < 5; i++) {
    const res = await call(`/r${i}`, { body: `b${i}` });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body.toString()), { url: `/r${i}`, body: `b${i}` });
  }
  assert.equal(accepted - before, 1, 'one TLS handshake for five requests');
});

test('a server presenting another certificate is not reached, on a new connection as on the first', async () => {
  const other = await generateCertificate('other', { serverAuth: true });
  const wrongPin = fingerprintOfPem(other.cert);
  for (let i = 0; i < 2; i++) {
    const e = await call('/x', { pin: wrongPin }).catch((err: unknown) => err);
    assert.ok(e instanceof MemberNotReached, String(e));
    assert.match((e as Error).message, /does not present the cluster certificate/);
  }
});

test('a refused connection is not reached; a connection cut after the request was sent is', async () => {
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const refused = await call('/x', { address: `127.0.0.1:${port}` }).catch((err: unknown) => err);
  assert.ok(refused instanceof MemberNotReached, String(refused));
  assert.match((refused as Error).message, /ECONNREFUSED/);
  const cut = await call('/hang-up', { body: 'x' }).catch((err: unknown) => err);
  assert.ok(cut instanceof Error && !(cut instanceof MemberNotReached), `reached, then cut: ${String(cut)}`);
});

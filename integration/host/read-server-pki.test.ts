/**
 * readServerPki against files an openssl CA made: PKI mode only with server.ca, a DER ca.crl taken as
 * LXD takes it, a warning (not a refusal) when server.crt is not the CA's, and a bad file named.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { generateCertificate } from '../../src/tls/ensure-server-certificate.ts';
import { pemOfCrl, readServerPki } from '../../src/tls/read-server-pki.ts';
import { makeTestCa, type Issued, type TestCa } from '../support/test-ca.ts';

let ca: TestCa;
let dir: string;
let server: Issued;
before(async () => {
  ca = await makeTestCa();
  server = await ca.issue('srv', 'server');
  dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pki-read-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
  await ca.cleanup();
});

test('no server.ca: not PKI mode, whatever else is there', async () => {
  await writeFile(path.join(dir, 'ca.crl'), await ca.crl());
  assert.equal(await readServerPki(dir, server.cert), undefined);
  await rm(path.join(dir, 'ca.crl'));
});

test('server.ca alone: the CA (its first certificate), no CRL, no warning for a CA-issued server.crt', async () => {
  const other = await makeTestCa('other CA');
  await writeFile(path.join(dir, 'server.ca'), ca.cert + other.cert);
  await other.cleanup();
  assert.deepEqual(await readServerPki(dir, server.cert), { ca: ca.cert });
});

test('a DER ca.crl is taken as PEM, the same CRL', async () => {
  const pem = await ca.crl();
  const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  await writeFile(path.join(dir, 'ca.crl'), der);
  const pki = await readServerPki(dir, server.cert);
  assert.equal(pki?.crl, pem);
  assert.equal(pemOfCrl(Buffer.from(pem)), pem);
  const text = await runCommand('openssl', ['crl', '-noout', '-issuer'], { input: pki!.crl!, timeoutMs: 30_000 });
  assert.match(text, /svcd test CA/);
});

test('a self-signed server.crt in PKI mode is a warning, as LXD (it serves it; clients ask for its fingerprint)', async () => {
  const own = await generateCertificate('root@box', { serverAuth: true });
  const pki = await readServerPki(dir, own.cert);
  assert.match(pki?.warning ?? '', /server\.crt is not issued by server\.ca/);
});

test('an unparseable server.ca or ca.crl stops the start, naming the file', async () => {
  await writeFile(path.join(dir, 'ca.crl'), '-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n');
  await assert.rejects(readServerPki(dir, server.cert), /ca\.crl: cannot be used/);
  await writeFile(path.join(dir, 'server.ca'), 'junk');
  await assert.rejects(readServerPki(dir, server.cert), /server\.ca: not a PEM certificate/);
});

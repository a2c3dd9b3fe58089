/**
 * PKI mode (auth_pki), as LXD: a CA made with openssl issues the server certificate, written with the CA
 * into the state directory (server.crt, server.key, server.ca) before the daemon starts, and ca.crl
 * revokes what it lists. Over HTTPS: a CA-issued client certificate becomes trusted with the trust
 * password; a self-signed one is refused (even when put in the trust store); a revoked one is refused
 * although it is in the trust store; the daemon presents the CA-issued certificate unchanged and names
 * the CA in its certificate request; a CRL written later takes effect at the next start. Debian's lxc
 * with client.ca adds the remote without a fingerprint prompt when its certificate is the CA's, and does
 * not even send a self-signed one.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { makeClientCertificate } from '../support/certs.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, freePort, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { makeTestCa, type Issued, type TestCa } from '../support/test-ca.ts';

const fp = (pem: string) => new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();

describe('PKI mode: server.ca and ca.crl in the state directory', () => {
  let ca: TestCa;
  let stateDir: string;
  let d: Daemon;
  let local: Client;
  let port: number;
  let server: Issued;
  let alice: Issued; // issued by the CA
  let carol: Issued; // issued by the CA, in the trust store, revoked
  let dave: Issued; // issued by the CA, trusted, revoked later
  let mallory: { cert: string; key: string }; // self-signed
  const PASSWORD = 'pki-s3cret';
  const overHttps = (cert?: { cert: string; key: string }) =>
    client({ https: { host: '127.0.0.1', port, ...(cert ?? {}) } });
  const auth = async (cert?: { cert: string; key: string }) => (await overHttps(cert).get('/1.0')).json.metadata.auth;

  before(async () => {
    ca = await makeTestCa('svcd pki test CA');
    [server, alice, carol, dave, mallory] = await Promise.all([
      ca.issue('pki-server', 'server'),
      ca.issue('alice', 'client'),
      ca.issue('carol', 'client'),
      ca.issue('dave', 'client'),
      makeClientCertificate('mallory'),
    ]);
    await ca.revoke(carol.cert);
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-e2e-pki-'));
    await writeFile(path.join(stateDir, 'server.crt'), server.cert);
    await writeFile(path.join(stateDir, 'server.key'), server.key, { mode: 0o600 });
    await writeFile(path.join(stateDir, 'server.ca'), ca.cert);
    await writeFile(path.join(stateDir, 'ca.crl'), await ca.crl());
    d = await startDaemon({ stateDir });
    local = client({ socketPath: d.socketPath });
    port = await freePort();
    const r = await local.patch('/1.0', {
      config: { 'core.https_address': `127.0.0.1:${port}`, 'core.trust_password': PASSWORD },
    });
    assert.equal(r.status, 200, r.text);
    // carol and mallory are put in the trust store by the local (trusted) user, as LXD allows.
    for (const [name, c] of [
      ['carol', carol],
      ['mallory', mallory],
    ] as const)
      assert.equal((await local.post('/1.0/certificates', { type: 'client', name, certificate: c.cert })).status, 200);
  });
  const clis: LxcCli[] = [];
  /** Debian's lxc with its client.crt/client.key and the CA as client.ca (LXD's client side of PKI mode). */
  const pkiCli = async (cert: { cert: string; key: string }) => {
    const cli = await lxcCli(stateDir);
    clis.push(cli);
    await writeFile(path.join(cli.conf, 'client.crt'), cert.cert);
    await writeFile(path.join(cli.conf, 'client.key'), cert.key, { mode: 0o600 });
    await writeFile(path.join(cli.conf, 'client.ca'), ca.cert);
    return cli;
  };
  after(async () => {
    for (const cli of clis) await cli.cleanup();
    await d?.destroy();
    await rm(stateDir, { recursive: true, force: true });
    await ca?.cleanup();
  });

  test('the daemon presents the CA-issued server.crt as is, verifiable with the CA, and GET /1.0 shows it', async () => {
    assert.equal(await readFile(path.join(stateDir, 'server.crt'), 'utf8'), server.cert, 'server.crt untouched');
    const presented = await new Promise<X509Certificate>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, ca: ca.cert, rejectUnauthorized: true }, () => {
        resolve(s.getPeerX509Certificate()!);
        s.end();
      });
      s.once('error', reject);
    });
    assert.equal(presented.fingerprint256, new X509Certificate(server.cert).fingerprint256);
    const env = (await local.get('/1.0')).json.metadata.environment;
    assert.equal(env.certificate_fingerprint, fp(server.cert));
    assert.equal(fp(env.certificate), fp(server.cert));
    assert.match(d.output(), /PKI mode \(server\.ca\)/);
  });

  test('the certificate request names the CA (so LXD clients send only a certificate it issued)', async () => {
    const out = await runCommand('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost'], {
      input: '',
      timeoutMs: 30_000,
    });
    assert.match(out, /Acceptable client certificate CA names\n[^\n]*CN ?= ?svcd pki test CA/);
  });

  test('a CA-issued client certificate is untrusted until added with the trust password, then trusted', async () => {
    assert.equal(await auth(alice), 'untrusted');
    expectError(await overHttps(alice).get('/1.0/containers'), 403);
    expectError(await overHttps(alice).post('/1.0/certificates', { type: 'client', password: 'wrong' }), 403);
    const ok = await overHttps(alice).post('/1.0/certificates', { type: 'client', password: PASSWORD, name: 'alice' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(await auth(alice), 'trusted');
    const list = await overHttps(alice).get('/1.0/containers');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.metadata, []);
    // dave, for the restart test below.
    assert.equal(
      (await overHttps(dave).post('/1.0/certificates', { type: 'client', password: PASSWORD, name: 'dave' })).status,
      200,
    );
    assert.equal(await auth(dave), 'trusted');
  });

  test('a self-signed client certificate is refused: untrusted although in the trust store, and the password cannot add it', async () => {
    assert.equal(await auth(mallory), 'untrusted');
    expectError(await overHttps(mallory).get('/1.0/containers'), 403);
    const fresh = await makeClientCertificate('mallory-2');
    const r = await overHttps(fresh).post('/1.0/certificates', { type: 'client', password: PASSWORD });
    assert.match(expectError(r, 403), /refused by the server CA/);
    const listed = (await local.get('/1.0/certificates')).json.metadata as string[];
    assert.ok(!listed.includes(`/1.0/certificates/${fp(fresh.cert)}`), 'nothing was added');
    assert.equal(await auth(), 'guest');
  });

  test('a CA-issued certificate revoked in ca.crl is refused although it is in the trust store', async () => {
    assert.equal(await auth(carol), 'untrusted');
    expectError(await overHttps(carol).get('/1.0/containers'), 403);
    const r = await overHttps(carol).post('/1.0/certificates', { type: 'client', password: PASSWORD });
    assert.match(expectError(r, 403), /CERT_REVOKED/);
  });

  test('ca.crl is read at start (as LXD): a revocation written later applies after a restart', async () => {
    await ca.revoke(dave.cert);
    await writeFile(path.join(stateDir, 'ca.crl'), await ca.crl());
    assert.equal(await auth(dave), 'trusted', 'still trusted until the restart');
    await d.stop();
    await d.restart();
    const r = await local.get('/1.0');
    assert.equal(r.json.metadata.config['core.https_address'], `127.0.0.1:${port}`);
    assert.equal(await auth(dave), 'untrusted');
    assert.equal(await auth(alice), 'trusted');
  });

  test('an unreadable server.ca stops the start, naming the file', async () => {
    await d.stop();
    await writeFile(path.join(stateDir, 'server.ca'), 'not a certificate\n');
    await assert.rejects(d.restart(), /server\.ca: not a PEM certificate/);
    await writeFile(path.join(stateDir, 'server.ca'), ca.cert);
    await d.restart();
    assert.equal(await auth(alice), 'trusted');
  });

  test('lxc remote add with client.ca: the server is verified by the CA (no fingerprint asked); a CA-issued client gets trusted and lists', async () => {
    const erin = await ca.issue('erin', 'client');
    const cli = await pkiCli(erin);
    await cli.ok(['remote', 'add', 'svcd', `https://127.0.0.1:${port}`, '--password', PASSWORD]);
    assert.equal(await auth(erin), 'trusted');
    assert.equal((await cli.ok(['list', 'svcd:', '--format', 'csv'])).trim(), '');
    assert.match(await cli.ok(['info', 'svcd:']), /auth: trusted/);
  });

  test('lxc remote add with a self-signed client certificate: lxc does not send it (the CA is not its issuer) and nothing is added', async () => {
    const cli = await pkiCli(await makeClientCertificate('mallory-cli'));
    const before = (await local.get('/1.0/certificates')).json.metadata as string[];
    const r = await cli.run(['remote', 'add', 'svcd', `https://127.0.0.1:${port}`, '--password', PASSWORD]);
    assert.notEqual(r.code, 0, r.stdout);
    // A guest's answer (403, as for any caller without a certificate), not the CA's refusal of a certificate sent.
    assert.match(r.stderr, /Error: not authorized\n$/);
    assert.doesNotMatch(r.stderr, /refused by the server CA/);
    assert.deepEqual((await local.get('/1.0/certificates')).json.metadata, before);
  });
});

import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { makeClientCertificate } from '../support/certs.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { freePort, client, eventually, expectError, type Client } from '../support/http.ts';

const fp = (pem: string) => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');

describe('server endpoints, HTTPS listener and trust', () => {
  let d: Daemon;
  let local: Client;
  let port: number;
  let alice: { cert: string; key: string };
  let bob: { cert: string; key: string };
  const overHttps = (cert?: { cert: string; key: string }, p = port) =>
    client({ https: { host: '127.0.0.1', port: p, ...(cert ?? {}) } });

  before(async () => {
    d = await startDaemon();
    local = client({ socketPath: d.socketPath });
    port = await freePort();
    [alice, bob] = await Promise.all([makeClientCertificate('alice'), makeClientCertificate('bob')]);
  });
  after(async () => d?.destroy());

  test('GET / lists /1.0; GET /1.0 over the unix socket is the trusted view with a real environment', async () => {
    const root = await local.get('/');
    assert.deepEqual(root.json.metadata, ['/1.0']);
    const res = await local.get('/1.0');
    assert.equal(res.status, 200);
    assert.equal(res.json.type, 'sync');
    assert.equal(res.json.status_code, 200);
    const m = res.json.metadata;
    assert.equal(m.auth, 'trusted');
    assert.equal(m.api_version, '1.0');
    assert.ok(m.api_extensions.includes('api_filtering'));
    // Announced because /1.0/instances is served (clients switch to it): integration/e2e/instances-api.test.ts.
    assert.ok(m.api_extensions.includes('instances'), 'instances is advertised');
    assert.equal((await local.get('/1.0/instances')).status, 200);
    assert.equal(m.environment.driver, 'lxc');
    assert.match(m.environment.driver_version, /^\d+\.\d+/);
    assert.equal(m.environment.server_pid, d.proc.pid);
    assert.match(m.environment.kernel_version, /^\d+\.\d+/);
    assert.ok(m.environment.architectures.length >= 1);
    assert.match(m.environment.certificate, /BEGIN CERTIFICATE/);
    assert.match(res.headers.etag ?? '', /^"[0-9a-f]{64}"$/);
  });

  test('GET /1.0/resources reports this host', async () => {
    const res = await local.get('/1.0/resources');
    const r = res.json.metadata;
    assert.ok(r.cpu.total >= 1);
    assert.equal(
      r.cpu.sockets.reduce((n: number, s: { threads: number }) => n + s.threads, 0),
      r.cpu.total,
    );
    assert.ok(r.memory.total > r.memory.used && r.memory.used > 0);
  });

  test('PUT /1.0 refuses unknown keys and bad values, changing nothing', async () => {
    expectError(await local.put('/1.0', { config: { 'core.bogus': 'x' } }), 400);
    expectError(await local.patch('/1.0', { config: { 'core.https_address': 'not an address:99999' } }), 400);
    expectError(await local.patch('/1.0', { config: { 'core.https_allowed_credentials': 'maybe' } }), 400);
    assert.deepEqual((await local.get('/1.0')).json.metadata.config, {});
  });

  test('core.https_address opens the HTTPS listener live; guests and untrusted callers get reduced views and 403', async () => {
    const r = await local.patch('/1.0', {
      config: { 'core.https_address': `127.0.0.1:${port}`, 'core.trust_password': 'sekrit' },
    });
    assert.equal(r.status, 200, r.text);
    const shown = (await local.get('/1.0')).json.metadata;
    assert.equal(shown.config['core.https_address'], `127.0.0.1:${port}`);
    assert.equal(shown.config['core.trust_password'], true, 'the trust password is never returned');
    assert.deepEqual(shown.environment.addresses, [`127.0.0.1:${port}`]);

    const guest = overHttps();
    const g = await guest.get('/1.0');
    assert.equal(g.json.metadata.auth, 'guest');
    assert.equal(g.json.metadata.config, undefined);
    assert.equal(g.json.metadata.environment, undefined);
    expectError(await guest.get('/1.0/profiles'), 403);
    expectError(await guest.get('/1.0/certificates'), 403);

    const untrusted = overHttps(alice);
    assert.equal((await untrusted.get('/1.0')).json.metadata.auth, 'untrusted');
    expectError(await untrusted.get('/1.0/profiles'), 403);
    expectError(await untrusted.put('/1.0', { config: {} }), 403);
    // No certificate on the connection: nothing to add.
    expectError(await guest.post('/1.0/certificates', { type: 'client', password: 'sekrit' }), 403);
  });

  test('the trust password flow: wrong password → 403; right password → trusted', async () => {
    const untrusted = overHttps(alice);
    expectError(await untrusted.post('/1.0/certificates', { type: 'client', password: 'wrong' }), 403);
    expectError(await untrusted.post('/1.0/certificates', { type: 'client' }), 403);
    // An untrusted caller cannot smuggle in someone else's certificate.
    expectError(
      await untrusted.post('/1.0/certificates', { type: 'client', password: 'sekrit', certificate: bob.cert }),
      403,
    );
    const ok = await untrusted.post('/1.0/certificates', { type: 'client', password: 'sekrit', name: 'alice' });
    assert.equal(ok.status, 200, ok.text);
    const trusted = overHttps(alice);
    assert.equal((await trusted.get('/1.0')).json.metadata.auth, 'trusted');
    assert.equal((await trusted.get('/1.0/profiles')).status, 200);
    const list = await trusted.get('/1.0/certificates');
    assert.deepEqual(list.json.metadata, [`/1.0/certificates/${fp(alice.cert)}`]);
    // Adding the same certificate again is a conflict.
    expectError(await trusted.post('/1.0/certificates', { type: 'client', certificate: alice.cert }), 409);
  });

  test('certificates API: add by a trusted caller, get (also by prefix), PUT/PATCH with ETag, delete revokes trust', async () => {
    const api = overHttps(alice);
    expectError(await api.post('/1.0/certificates', { type: 'client', certificate: 'not a cert' }), 400);
    expectError(await api.post('/1.0/certificates', { type: 'server', certificate: bob.cert }), 400);
    assert.equal(
      (await api.post('/1.0/certificates', { type: 'client', certificate: bob.cert, name: 'bob' })).status,
      200,
    );
    const bobFp = fp(bob.cert);
    const got = await api.get(`/1.0/certificates/${bobFp}`);
    assert.deepEqual(
      { ...got.json.metadata, certificate: undefined },
      { type: 'client', name: 'bob', fingerprint: bobFp, certificate: undefined },
    );
    assert.equal(
      new X509Certificate(got.json.metadata.certificate).fingerprint256,
      new X509Certificate(bob.cert).fingerprint256,
    );
    assert.equal((await api.get(`/1.0/certificates/${bobFp.slice(0, 12)}`)).json.metadata.fingerprint, bobFp);
    const etag = got.headers.etag!;
    assert.equal((await api.patch(`/1.0/certificates/${bobFp}`, { name: 'robert' }, { 'If-Match': etag })).status, 200);
    expectError(
      await api.put(`/1.0/certificates/${bobFp}`, { type: 'client', name: 'bobby' }, { 'If-Match': etag }),
      412,
    );
    assert.equal((await api.get(`/1.0/certificates/${bobFp}`)).json.metadata.name, 'robert');
    assert.equal((await overHttps(bob).get('/1.0')).json.metadata.auth, 'trusted');
    const del = await api.delete(`/1.0/certificates/${bobFp}`);
    assert.equal(del.status, 202);
    assert.equal(del.json.type, 'sync');
    assert.equal((await overHttps(bob).get('/1.0')).json.metadata.auth, 'untrusted');
    expectError(await api.get(`/1.0/certificates/${bobFp}`), 404);
  });

  test('ETag and If-Match on /1.0: a stale ETag → 412 and nothing changes', async () => {
    const cur = await local.get('/1.0');
    const etag = cur.headers.etag!;
    assert.equal(
      (await local.patch('/1.0', { config: { 'core.https_allowed_credentials': 'true' } }, { 'If-Match': etag }))
        .status,
      200,
    );
    expectError(
      await local.patch('/1.0', { config: { 'core.https_allowed_credentials': 'false' } }, { 'If-Match': etag }),
      412,
    );
    assert.equal((await local.get('/1.0')).json.metadata.config['core.https_allowed_credentials'], 'true');
    const res = await overHttps(alice).get('/1.0');
    assert.equal(res.headers['access-control-allow-credentials'], 'true');
  });

  test('PATCH keeps other keys; PUT replaces, and the trust password shown as true round-trips unchanged', async () => {
    const cfg = (await local.get('/1.0')).json.metadata.config;
    // What `lxc config edit` does: send back what it read.
    assert.equal((await local.put('/1.0', { config: cfg })).status, 200);
    // The password still works: a new client can use it.
    const carol = await makeClientCertificate('carol');
    assert.equal(
      (await overHttps(carol).post('/1.0/certificates', { type: 'client', password: 'sekrit' })).status,
      200,
    );
    assert.equal((await overHttps(carol).get('/1.0')).json.metadata.auth, 'trusted');
  });

  test('the HTTPS listener moves to a new port and closes live; a port in use is refused and nothing is saved', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const busy = (blocker.address() as net.AddressInfo).port;
    try {
      const res = await local.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${busy}` } });
      assert.match(expectError(res, 400), /listen/i);
      assert.equal((await local.get('/1.0')).json.metadata.config['core.https_address'], `127.0.0.1:${port}`);
      assert.equal((await overHttps(alice).get('/1.0')).status, 200, 'the old listener still serves');
    } finally {
      blocker.close();
    }
    const port2 = await freePort();
    assert.equal((await local.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port2}` } })).status, 200);
    assert.equal((await overHttps(alice, port2).get('/1.0')).json.metadata.auth, 'trusted');
    await assert.rejects(overHttps(alice, port).get('/1.0'), /ECONNREFUSED/);
    const cfg = (await local.get('/1.0')).json.metadata.config;
    delete cfg['core.https_address'];
    assert.equal((await local.put('/1.0', { config: cfg })).status, 200);
    await eventually(
      async () =>
        overHttps(alice, port2)
          .get('/1.0')
          .then(
            () => false,
            () => true,
          ),
      'the HTTPS listener to close',
    );
    assert.deepEqual((await local.get('/1.0')).json.metadata.environment.addresses, []);
  });

  test('settings survive a restart: the HTTPS listener comes back, trust is kept', async () => {
    const port3 = await freePort();
    assert.equal((await local.patch('/1.0', { config: { 'core.https_address': `127.0.0.1:${port3}` } })).status, 200);
    await d.stop();
    await d.restart();
    assert.equal((await overHttps(alice, port3).get('/1.0')).json.metadata.auth, 'trusted');
  });
});

import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import { before, test } from 'node:test';
import { asc } from 'drizzle-orm';
import {
  addCertificate,
  deleteCertificate,
  listCertificates,
  readCertificate,
  updateCertificate,
} from '../../src/desired/certificates.ts';
import { NotFoundError, StaleWriteError, ValidationError } from '../../src/desired/errors.ts';
import { certificates, serverConfig } from '../../src/desired/schema/index.ts';
import {
  computeServerConfig,
  readServerConfig,
  renderServerConfig,
  verifyPassword,
  writeServerConfig,
} from '../../src/desired/server-config.ts';
import { makeClientCertificate } from '../support/certs.ts';
import { assertConflict, type SuiteContext } from './helpers.ts';

const SCRYPT = /^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/;

export function defineServerTests(ctx: SuiteContext): void {
  const allRows = () => ctx.db().select().from(serverConfig).orderBy(asc(serverConfig.node), asc(serverConfig.key));

  test('server config: compute + write + read round trip; a member-local key stays with its member', async () => {
    const db = ctx.db();
    assert.deepEqual(await readServerConfig(db, 'node-a'), {});
    const next = await computeServerConfig(
      {},
      {
        'core.https_address': '127.0.0.1:8443',
        'core.trust_password': 'first-secret',
        'core.https_allowed_credentials': true,
      },
      true,
    );
    await writeServerConfig(db, 'node-a', next);
    assert.deepEqual(await readServerConfig(db, 'node-a'), next);
    const hash = next['core.trust_password']!;
    assert.match(hash, SCRYPT);
    assert.deepEqual(await allRows(), [
      { node: '', key: 'core.https_allowed_credentials', value: 'true' },
      { node: '', key: 'core.trust_password', value: hash },
      { node: 'node-a', key: 'core.https_address', value: '127.0.0.1:8443' },
    ]);
    const cluster = { 'core.https_allowed_credentials': 'true', 'core.trust_password': hash };
    assert.deepEqual(await readServerConfig(db, 'node-b'), cluster, 'another member does not see node-a’s address');

    // node-b sets its own address (PATCH): node-a's stays.
    const forB = await computeServerConfig(
      await readServerConfig(db, 'node-b'),
      { 'core.https_address': ':9443' },
      false,
    );
    await writeServerConfig(db, 'node-b', forB);
    assert.deepEqual(await readServerConfig(db, 'node-b'), { ...cluster, 'core.https_address': ':9443' });
    assert.deepEqual(await readServerConfig(db, 'node-a'), { ...cluster, 'core.https_address': '127.0.0.1:8443' });
    assert.equal((await allRows()).length, 4);

    // node-a replaces everything (PUT) without an address: only its own local row goes.
    const put = await computeServerConfig(
      await readServerConfig(db, 'node-a'),
      { 'core.https_allowed_credentials': 'false' },
      true,
    );
    await writeServerConfig(db, 'node-a', put);
    assert.deepEqual(await readServerConfig(db, 'node-a'), { 'core.https_allowed_credentials': 'false' });
    assert.deepEqual(await readServerConfig(db, 'node-b'), {
      'core.https_allowed_credentials': 'false',
      'core.https_address': ':9443',
    });
    await assert.rejects(computeServerConfig({}, { 'core.https_address': 'not an address' }, false), ValidationError);
    await assert.rejects(computeServerConfig({}, { 'core.nope': 'x' }, false), ValidationError);
  });

  test('server config: the trust password is stored hashed, never in plain text, and verifyPassword accepts it', async () => {
    const db = ctx.db();
    const plain = 'correct horse battery staple';
    const next = await computeServerConfig(
      await readServerConfig(db, 'node-c'),
      { 'core.trust_password': plain },
      false,
    );
    await writeServerConfig(db, 'node-c', next);
    const rows = await allRows();
    assert.ok(
      rows.every((r) => !r.value.includes(plain)),
      'no row holds the plain password',
    );
    const stored = rows.find((r) => r.key === 'core.trust_password');
    assert.equal(stored?.node, '');
    assert.match(stored!.value, SCRYPT);
    assert.equal(await verifyPassword(plain, stored!.value), true);
    assert.equal(await verifyPassword('wrong', stored!.value), false);
    assert.equal(renderServerConfig(await readServerConfig(db, 'node-c'))['core.trust_password'], true);

    // `true` (what GET shows) keeps the stored hash; a new password replaces it.
    const kept = await computeServerConfig(
      await readServerConfig(db, 'node-c'),
      { 'core.trust_password': true },
      false,
    );
    await writeServerConfig(db, 'node-c', kept);
    assert.equal((await readServerConfig(db, 'node-c'))['core.trust_password'], stored!.value);
    const changed = await computeServerConfig(
      await readServerConfig(db, 'node-c'),
      { 'core.trust_password': 'second' },
      false,
    );
    await writeServerConfig(db, 'node-c', changed);
    const now = (await readServerConfig(db, 'node-c'))['core.trust_password'];
    assert.notEqual(now, stored!.value);
    assert.equal(await verifyPassword('second', now), true);
    assert.equal(await verifyPassword(plain, now), false);
  });

  let alice: { cert: string; key: string };
  before(async () => {
    alice = await makeClientCertificate('alice');
  });

  test('certificates: add, read by prefix, update, delete; a duplicate is a ConflictError (409)', async () => {
    const db = ctx.db();
    const fp = createHash('sha256').update(new X509Certificate(alice.cert).raw).digest('hex');
    const added = await addCertificate(db, { pem: alice.cert, name: 'alice', type: 'client' });
    assert.equal(added.fingerprint, fp);
    for (const prefix of [fp, fp.slice(0, 12), fp.slice(0, 12).toUpperCase()]) {
      const r = await readCertificate(db, prefix);
      assert.deepEqual([r.fingerprint, r.name, r.type], [fp, 'alice', 'client']);
      assert.equal(new X509Certificate(r.certificate).fingerprint256, new X509Certificate(alice.cert).fingerprint256);
    }
    assert.ok((await listCertificates(db)).some((r) => r.fingerprint === fp));

    await assertConflict(addCertificate(db, { pem: alice.cert, name: 'alice again', type: 'client' }));
    assert.equal((await readCertificate(db, fp)).name, 'alice');

    await updateCertificate(db, fp, { name: 'alice-laptop', type: 'client' });
    assert.equal((await readCertificate(db, fp.slice(0, 8))).name, 'alice-laptop');

    await deleteCertificate(db, fp);
    await assert.rejects(readCertificate(db, fp), NotFoundError);
    await assert.rejects(deleteCertificate(db, fp), NotFoundError);
    await assert.rejects(updateCertificate(db, fp, { name: 'x', type: 'client' }), NotFoundError);
    assert.ok(!(await listCertificates(db)).some((r) => r.fingerprint === fp));
  });

  test('certificates: an ambiguous prefix is refused, a unique one found', async () => {
    const db = ctx.db();
    const a = `abcd${'0'.repeat(60)}`;
    const b = `abce${'0'.repeat(60)}`;
    await db.insert(certificates).values([
      { fingerprint: a, certificate: 'pem-a' },
      { fingerprint: b, certificate: 'pem-b' },
    ]);
    await assert.rejects(readCertificate(db, 'abc'), ValidationError);
    assert.equal((await readCertificate(db, 'abcd')).certificate, 'pem-a');
    assert.equal((await readCertificate(db, 'ABCE')).certificate, 'pem-b');
    await assert.rejects(readCertificate(db, 'abcf'), NotFoundError);
    await assert.rejects(readCertificate(db, 'abc%'), NotFoundError);
  });

  test('conditional writes (If-Match): of 10 concurrent writes based on the same read exactly one lands, the others are stale and write nothing', async () => {
    const db = ctx.db();
    const base = await readServerConfig(db, 'node-r');
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        writeServerConfig(
          db,
          'node-r',
          { ...base, 'images.compression_algorithm': ['xz', 'zstd', 'bzip2', 'lzma', 'none'][i % 5]! },
          base,
        ),
      ),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.equal(won.length, 1, results.map((r) => r.status).join(' '));
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof StaleWriteError, String(r.reason));
    assert.equal(
      (await readServerConfig(db, 'node-r'))['images.compression_algorithm'],
      ['xz', 'zstd', 'bzip2', 'lzma', 'none'][won[0]! % 5],
    );

    const { cert } = await makeClientCertificate('race');
    const row = await addCertificate(db, { pem: cert, name: 'before', type: 'client' });
    const read = { name: row.name, type: row.type };
    const certs = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        updateCertificate(db, row.fingerprint, { name: `w${i}`, type: 'client' }, read),
      ),
    );
    const certWon = certs.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    assert.equal(certWon.length, 1, certs.map((r) => r.status).join(' '));
    for (const r of certs)
      if (r.status === 'rejected') assert.ok(r.reason instanceof StaleWriteError, String(r.reason));
    assert.equal((await readCertificate(db, row.fingerprint)).name, `w${certWon[0]}`);
    await deleteCertificate(db, row.fingerprint);
  });
}

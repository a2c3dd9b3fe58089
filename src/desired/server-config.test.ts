import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ValidationError } from './errors.ts';
import {
  BACKUP_COMPRESSION,
  checkListenAddress,
  computeServerConfig,
  IMAGE_COMPRESSION,
  renderServerConfig,
  resolveCompression,
  verifyPassword,
} from './server-config.ts';

test('listen addresses', () => {
  for (const ok of ['127.0.0.1:8443', '[::]:8443', ':8443', '0.0.0.0', '[::1]:1', 'host.example:443', ''])
    assert.equal(checkListenAddress(ok), undefined, ok);
  for (const bad of ['127.0.0.1:0', '127.0.0.1:70000', 'a b:1', '[::1', '1.2.3.4:port'])
    assert.ok(checkListenAddress(bad), bad);
});

test('a new trust password is stored hashed (salted) and verifies; GET shows only that it is set', async () => {
  const next = await computeServerConfig({}, { 'core.trust_password': 'pw' }, false);
  const hash = next['core.trust_password']!;
  assert.match(hash, /^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
  assert.ok(!hash.includes('pw$'));
  assert.equal(await verifyPassword('pw', hash), true);
  assert.equal(await verifyPassword('PW', hash), false);
  assert.equal(await verifyPassword('pw', undefined), false);
  const again = await computeServerConfig({}, { 'core.trust_password': 'pw' }, false);
  assert.notEqual(again['core.trust_password'], hash, 'salted: same password, different hash');
  assert.deepEqual(renderServerConfig(next), { 'core.trust_password': true });
});

test('PUT replaces, PATCH merges; `true` for a secret keeps it; "" removes a key; numbers become strings', async () => {
  const cur = { 'core.trust_password': 'scrypt$00$11', 'core.https_address': ':8443' };
  assert.deepEqual(await computeServerConfig(cur, { 'core.https_allowed_credentials': true }, true), {
    'core.https_allowed_credentials': 'true',
  });
  assert.deepEqual(await computeServerConfig(cur, { 'core.trust_password': true }, true), {
    'core.trust_password': 'scrypt$00$11',
  });
  assert.deepEqual(await computeServerConfig(cur, { 'core.https_address': '' }, false), {
    'core.trust_password': 'scrypt$00$11',
  });
  assert.deepEqual(await computeServerConfig({}, { 'core.https_address': 8443 }, false), {
    'core.https_address': '8443',
  });
  await assert.rejects(computeServerConfig(cur, { 'core.nope': 'x' }, false), ValidationError);
});

test('backups.compression_algorithm: the backup compressions only, a bad one names the key', async () => {
  for (const c of BACKUP_COMPRESSION)
    assert.equal(
      (await computeServerConfig({}, { 'backups.compression_algorithm': c }, false))['backups.compression_algorithm'],
      c,
    );
  for (const bad of ['nope', 'lzma', 'squashfs', 'GZIP', ' gzip'])
    await assert.rejects(
      computeServerConfig({}, { 'backups.compression_algorithm': bad }, false),
      (e: Error) =>
        e instanceof ValidationError &&
        e.message.includes('"backups.compression_algorithm"') &&
        e.message.includes('must be one of none, gzip, bzip2, xz, zstd'),
      bad,
    );
  // lzma stays an image compression.
  assert.equal(
    (await computeServerConfig({}, { 'images.compression_algorithm': 'lzma' }, false))['images.compression_algorithm'],
    'lzma',
  );
});

test('resolveCompression: the request, else the server key, else gzip; a bad request names compression_algorithm', () => {
  assert.equal(resolveCompression(undefined, undefined, BACKUP_COMPRESSION), 'gzip');
  assert.equal(resolveCompression('', 'xz', BACKUP_COMPRESSION), 'xz');
  assert.equal(resolveCompression('none', 'xz', BACKUP_COMPRESSION), 'none');
  assert.equal(resolveCompression('lzma', undefined, IMAGE_COMPRESSION), 'lzma');
  for (const bad of ['lzma', 'squashfs', 'foo'])
    assert.throws(
      () => resolveCompression(bad, 'xz', BACKUP_COMPRESSION),
      (e: Error) => e instanceof ValidationError && e.message.startsWith(`Invalid compression_algorithm "${bad}"`),
      bad,
    );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createImageSecrets } from './image-secrets.ts';

test('a secret grants one image of one project, until validMs after its first use', async () => {
  let t = 1_000;
  const secrets = createImageSecrets({ validMs: 5_000, now: () => t });
  const a = secrets.issue('f'.repeat(64), 'default');
  assert.equal(secrets.use(a.secret, 'e'.repeat(64), 'default'), false, 'another image');
  assert.equal(secrets.use(a.secret, 'f'.repeat(64), 'other'), false, 'another project');
  assert.equal(secrets.use('nope', 'f'.repeat(64), 'default'), false);
  t = 100_000; // unused secrets do not age
  assert.equal(secrets.use(a.secret, 'f'.repeat(64), 'default'), true, 'first use');
  t += 4_900;
  assert.equal(secrets.use(a.secret, 'f'.repeat(64), 'default'), true, 'still within 5 s');
  t += 200;
  assert.equal(secrets.use(a.secret, 'f'.repeat(64), 'default'), false, 'past 5 s');
  await a.expired;
  assert.equal(secrets.size, 0);
});

test('revoking a secret ends it at once', async () => {
  const secrets = createImageSecrets();
  const a = secrets.issue('a'.repeat(64), 'default');
  a.revoke();
  await a.expired;
  assert.equal(secrets.use(a.secret, 'a'.repeat(64), 'default'), false);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createVersionedCache, createVersionedReads } from './versioned-cache.ts';

test('a value is kept for its version: concurrent gets share a read, another version reads again, a failure is not kept', async () => {
  const cache = createVersionedCache<number>(8);
  let reads = 0;
  const read = () => Promise.resolve(++reads);
  assert.deepEqual(await Promise.all([cache.get('k', 'v1', read), cache.get('k', 'v1', read)]), [1, 1]);
  assert.equal(await cache.get('k', 'v1', read), 1);
  assert.equal(await cache.get('other', 'v1', read), 2, 'per key');
  assert.equal(await cache.get('k', 'v2', read), 3, 'a new version reads again');
  assert.equal(await cache.get('k', 'v1', read), 4, 'only the latest version is kept');
  await assert.rejects(
    cache.get('k', 'v5', () => Promise.reject(new Error('gone'))),
    /gone/,
  );
  assert.equal(await cache.get('k', 'v5', read), 5, 'the failed read was not kept');
});

test('a thenable is awaited once; beyond maxKeys the longest unrefreshed key goes first', async () => {
  const cache = createVersionedCache<string>(2);
  let runs = 0;
  const thenable = (v: string): PromiseLike<string> => ({
    then(ok, fail) {
      runs++;
      return Promise.resolve(v).then(ok, fail);
    },
  });
  assert.equal(await cache.get('a', '1', () => thenable('A')), 'A');
  assert.equal(await cache.get('a', '1', () => thenable('x')), 'A');
  assert.equal(runs, 1, 'run once, then kept');
  await cache.get('b', '1', () => thenable('B'));
  await cache.get('a', '1', () => thenable('x'));
  await cache.get('c', '1', () => thenable('C'));
  assert.equal(await cache.get('b', '1', () => thenable('x')), 'B', 'b was read after a: kept');
  assert.equal(
    await cache.get('a', '1', () => thenable('A2')),
    'A2',
    'a, read first (a hit is no refresh), went first',
  );
});

test('createVersionedReads: asks the version on every get and reads a key again only when it changed', async () => {
  let version = 1;
  let reads = 0;
  const cache = createVersionedReads(
    () => Promise.resolve(String(version)),
    (key) => Promise.resolve(`${key}:${++reads}`),
  );
  assert.equal(await cache.get('x'), 'x:1');
  assert.equal(await cache.get('x'), 'x:1');
  version = 2;
  assert.equal(await cache.get('x'), 'x:2');
});

test('peek answers only what is kept at the current version, and reads nothing', async () => {
  let version = 'v1';
  let reads = 0;
  const kept = createVersionedReads(
    async () => version,
    async (k) => `${k}${++reads}`,
  );
  assert.equal(await kept.peek('a'), undefined);
  assert.equal(reads, 0);
  assert.equal(await kept.get('a'), 'a1');
  assert.equal(await kept.peek('a'), 'a1');
  version = 'v2';
  assert.equal(await kept.peek('a'), undefined, 'a write since: not kept');
  assert.equal(reads, 1);
});

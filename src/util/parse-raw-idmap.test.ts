import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRawIdmap } from './parse-raw-idmap.ts';

test('parses uid, gid and both lines with single ids and inclusive ranges', () => {
  assert.deepEqual(parseRawIdmap('uid 1000 1000\n\n# c\ngid 50-59 100-109\nboth  33 33 '), [
    { kind: 'uid', hostid: 1000, nsid: 1000, count: 1 },
    { kind: 'gid', hostid: 50, nsid: 100, count: 10 },
    { kind: 'both', hostid: 33, nsid: 33, count: 1 },
  ]);
  assert.deepEqual(parseRawIdmap(''), []);
});

test('refuses bad lines with a message naming the line', () => {
  assert.throws(() => parseRawIdmap('user 1 1'), /bad line "user 1 1"/);
  assert.throws(() => parseRawIdmap('uid 1'), /bad line/);
  assert.throws(() => parseRawIdmap('uid 1-2 5'), /maps 2 host ids onto 1 container ids/);
  assert.throws(() => parseRawIdmap('uid 5-2 5-8'), /ends before it starts/);
  assert.throws(() => parseRawIdmap('uid a 1'), /bad id "a"/);
  assert.throws(() => parseRawIdmap('uid 4294967295 1'), /past the largest id/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSubids } from './parse-subids.ts';
import { IdmapError } from '../../util/idmap-error.ts';

const FILE = `# comment
lxd:100000:65536
root:1000000:1000000000

0:5000000:65536
root:2000000000:10
root:7:0
`;

test('returns root ranges in file order, by name and (when given) by uid', () => {
  assert.deepEqual(parseSubids(FILE), [
    { start: 1000000, count: 1000000000 },
    { start: 2000000000, count: 10 },
  ]);
  assert.deepEqual(parseSubids(FILE, 'root', 0), [
    { start: 1000000, count: 1000000000 },
    { start: 5000000, count: 65536 },
    { start: 2000000000, count: 10 },
  ]);
  assert.deepEqual(parseSubids(FILE, 'lxd'), [{ start: 100000, count: 65536 }]);
  assert.deepEqual(parseSubids(''), []);
  assert.deepEqual(parseSubids('alice:100000:65536\n'), []);
});

test('a malformed line for the user throws; other users are not checked', () => {
  assert.throws(
    () => parseSubids('root:1000000\n'),
    (e: unknown) => e instanceof IdmapError && /line 1 \("root:1000000"\)/.test(e.message),
  );
  assert.throws(() => parseSubids('root:x:65536\n'), IdmapError);
  assert.throws(() => parseSubids('root:4294967000:65536\n'), /largest id/);
  assert.deepEqual(parseSubids('bob:oops\nroot:1:2\n'), [{ start: 1, count: 2 }]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeIdmap } from './compute-idmap.ts';
import { renderIdmapLines } from './render-idmap-lines.ts';
import { IdmapError } from '../../util/idmap-error.ts';

const ROOT = [{ start: 1000000, count: 1000000000 }];
const SMALL = [{ start: 100000, count: 196608 }]; // shared block + 2 isolated blocks of 65536
const base = { subuid: ROOT, subgid: ROOT, privileged: false };
const one = (hostid: number, count = 65536) => [{ nsid: 0, hostid, count }];

test('privileged containers get no map (raw.id_map is ignored, as in LXD)', () => {
  assert.deepEqual(computeIdmap({ ...base, privileged: true, rawIdmap: 'both 1000 1000' }), { uid: [], gid: [] });
  assert.deepEqual(computeIdmap({ subuid: [], subgid: [], privileged: true }), { uid: [], gid: [] });
});

test('unprivileged default: the shared 65536 ids at the start of root range', () => {
  assert.deepEqual(computeIdmap(base), { uid: one(1000000), gid: one(1000000) });
  assert.deepEqual(computeIdmap({ ...base, subgid: [{ start: 3000000, count: 65536 }] }), {
    uid: one(1000000),
    gid: one(3000000),
  });
  assert.deepEqual(computeIdmap({ ...base, size: 1000 }).uid, one(1000000, 1000));
  // the first range large enough is used
  assert.deepEqual(computeIdmap({ ...base, subuid: [{ start: 10, count: 100 }, ...ROOT] }).uid, one(1000000));
});

test('isolated: block i after the shared block, validated against the range', () => {
  assert.deepEqual(computeIdmap({ ...base, isolated: true, index: 0 }), { uid: one(1065536), gid: one(1065536) });
  assert.deepEqual(computeIdmap({ ...base, isolated: true, index: 3 }).uid, one(1000000 + 65536 * 4));
  assert.deepEqual(
    computeIdmap({ ...base, isolated: true, index: 2, size: 100000 }).gid,
    one(1000000 + 65536 + 200000, 100000),
  );
  const small = { subuid: SMALL, subgid: SMALL, privileged: false, isolated: true };
  assert.deepEqual(computeIdmap({ ...small, index: 1 }).uid, one(100000 + 2 * 65536));
  assert.throws(
    () => computeIdmap({ ...small, index: 2 }),
    (e: unknown) =>
      e instanceof IdmapError &&
      e.message ===
        "security.idmap.isolated: block 2 of 65536 uids needs host uids 296608-362143, past the end of root's /etc/subuid range 100000-296607 (room for 2 isolated block(s) of this size)",
  );
  assert.throws(() => computeIdmap({ ...base, isolated: true }), /needs a block index/);
});

test('security.idmap.base forces the host start and must lie in a delegated range', () => {
  assert.deepEqual(computeIdmap({ ...base, base: 5000000 }), { uid: one(5000000), gid: one(5000000) });
  assert.deepEqual(computeIdmap({ ...base, base: 5000000, isolated: true, index: 9 }).uid, one(5000000));
  assert.throws(
    () => computeIdmap({ ...base, base: 500 }),
    /security.idmap.base=500 with security.idmap.size=65536 needs host uids 500-66035, which is not inside root's \/etc\/subuid range\(s\) 1000000-1000999999/,
  );
  assert.throws(() => computeIdmap({ ...base, base: 1000999999 - 10 }), /not inside/);
});

test('raw.id_map punches holes, keeping the other ids where they were', () => {
  const m = computeIdmap({ ...base, rawIdmap: 'uid 1000 1000\ngid 2000-2001 0-1\nboth 33 33' });
  assert.deepEqual(m.uid, [
    { nsid: 0, hostid: 1000000, count: 33 },
    { nsid: 33, hostid: 33, count: 1 },
    { nsid: 34, hostid: 1000034, count: 966 },
    { nsid: 1000, hostid: 1000, count: 1 },
    { nsid: 1001, hostid: 1001001, count: 64535 },
  ]);
  assert.deepEqual(m.gid, [
    { nsid: 0, hostid: 2000, count: 2 },
    { nsid: 2, hostid: 1000002, count: 31 },
    { nsid: 33, hostid: 33, count: 1 },
    { nsid: 34, hostid: 1000034, count: 65502 },
  ]);
  // outside the container's range: appended, nothing punched; at the very end: no empty upper part
  assert.deepEqual(computeIdmap({ ...base, size: 10, rawIdmap: 'uid 1000 100\nuid 1001 9' }).uid, [
    { nsid: 0, hostid: 1000000, count: 9 },
    { nsid: 9, hostid: 1001, count: 1 },
    { nsid: 100, hostid: 1000, count: 1 },
  ]);
  assert.deepEqual(renderIdmapLines(computeIdmap({ ...base, rawIdmap: 'both 1000 0' })), [
    'lxc.idmap = u 0 1000 1',
    'lxc.idmap = u 1 1000001 65535',
    'lxc.idmap = g 0 1000 1',
    'lxc.idmap = g 1 1000001 65535',
  ]);
});

test('raw.id_map conflicts are refused with clear messages', () => {
  assert.throws(
    () => computeIdmap({ ...base, rawIdmap: 'uid 1000005 5' }),
    /host uids 1000005-1000005 overlap the container's own map \(host uids 1000000-1065535\)/,
  );
  assert.throws(
    () => computeIdmap({ ...base, rawIdmap: 'uid 10-19 5-14\nboth 20 10' }),
    /container uids 10-10 and 5-14 overlap/,
  );
  assert.throws(
    () => computeIdmap({ ...base, rawIdmap: 'gid 10-19 5-14\ngid 15 100' }),
    /host gids 15-15 and 10-19 overlap/,
  );
  const many = Array.from({ length: 200 }, (_, i) => `uid ${10 + i} ${2 * i + 1}`).join('\n');
  assert.throws(() => computeIdmap({ ...base, rawIdmap: many }), /needs 401 lines; the kernel accepts at most 340/);
});

test('no or too small delegated ranges, bad numbers', () => {
  assert.throws(
    () => computeIdmap({ ...base, subuid: [] }),
    (e: unknown) => e instanceof IdmapError && /root has no uid range in \/etc\/subuid/.test(e.message),
  );
  assert.throws(
    () => computeIdmap({ ...base, subgid: [{ start: 1, count: 1000 }] }),
    /security.idmap.size=65536 does not fit in root's \/etc\/subgid range\(s\) 1-1000/,
  );
  assert.throws(() => computeIdmap({ ...base, size: 0 }), /security.idmap.size must be an integer >= 1/);
  assert.throws(() => computeIdmap({ ...base, isolated: true, index: -1 }), /block index must be an integer >= 0/);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMeminfo } from './parse-meminfo.ts';
import { MEMINFO_MODERN, MEMINFO_NO_AVAILABLE } from './test-fixtures.ts';

test('kB values are converted to bytes (modern kernel)', () => {
  const m = parseMeminfo(MEMINFO_MODERN);
  assert.equal(m.MemTotal, 16303480 * 1024);
  assert.equal(m.MemAvailable, 11843220 * 1024);
  assert.equal(m.MemFree, 9241716 * 1024);
  assert.equal(m['Active(anon)'], 5196 * 1024);
  assert.equal(m.VmallocTotal, 34359738367 * 1024);
  assert.equal(Object.keys(m).length, 51);
});

test('unit-less values stay counts', () => {
  const m = parseMeminfo(MEMINFO_MODERN);
  assert.equal(m.HugePages_Total, 0);
  assert.equal(parseMeminfo('HugePages_Total:      16\n').HugePages_Total, 16);
  assert.equal(m.Hugepagesize, 2048 * 1024);
});

test('old kernel without MemAvailable', () => {
  const m = parseMeminfo(MEMINFO_NO_AVAILABLE);
  assert.equal(m.MemTotal, 2049988 * 1024);
  assert.equal(m.MemAvailable, undefined);
  assert.equal(m.MemFree, 123456 * 1024);
  assert.equal(m.Buffers, 65432 * 1024);
  assert.equal(m.Cached, 789012 * 1024);
});

test('garbage lines are ignored', () => {
  assert.deepEqual(parseMeminfo('nonsense\nMemTotal: 1 kB\n: 5\nFoo: bar kB\n'), { MemTotal: 1024 });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCpuList } from './parse-cpu-list.ts';

test('parses ids and ranges as written in /sys/devices/system/cpu/online', () => {
  assert.deepEqual(parseCpuList('0-3,6\n'), [0, 1, 2, 3, 6]);
  assert.deepEqual(parseCpuList('0\n'), [0]);
  assert.deepEqual(parseCpuList('0-1,4-5,8\n'), [0, 1, 4, 5, 8]);
  assert.deepEqual(parseCpuList('126-127'), [126, 127]);
});

test("empty list (e.g. an empty 'offline' file) yields no CPUs", () => {
  assert.deepEqual(parseCpuList('\n'), []);
  assert.deepEqual(parseCpuList(''), []);
});

test('result is sorted and de-duplicated', () => {
  assert.deepEqual(parseCpuList('6,0-2,1-3'), [0, 1, 2, 3, 6]);
});

test('malformed input throws instead of being misread', () => {
  assert.throws(() => parseCpuList('3-1'), RangeError);
  assert.throws(() => parseCpuList('a'), RangeError);
  assert.throws(() => parseCpuList('0-'), RangeError);
  assert.throws(() => parseCpuList('0,,1'), RangeError);
});

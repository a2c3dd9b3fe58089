import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLatestStampWriter } from './latest-stamp-writer.ts';

const t = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s));

test('touches while a write is in flight share one next write, of the latest stamp', async () => {
  const writes: [string, number][] = [];
  const gates: (() => void)[] = [];
  const w = createLatestStampWriter((key, at) => {
    writes.push([key, at.getUTCSeconds()]);
    return new Promise<void>((r) => gates.push(r));
  });
  const done: number[] = [];
  const first = w.touch('img', t(1)).then(() => done.push(1));
  const later = [3, 5, 2].map((s) => w.touch('img', t(s)).then(() => done.push(s)));
  const other = w.touch('other', t(9));
  assert.deepEqual(
    writes,
    [
      ['img', 1],
      ['other', 9],
    ],
    'one write per key at a time',
  );
  gates[0]!();
  await first;
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    writes,
    [
      ['img', 1],
      ['other', 9],
      ['img', 5],
    ],
    'the merged write has the latest stamp asked for',
  );
  assert.deepEqual(done, [1], 'the later callers wait for the write of their stamp');
  gates[2]!();
  await Promise.all(later);
  assert.deepEqual(done.sort(), [1, 2, 3, 5]);
  gates[1]!();
  await other;
  const last = w.touch('img', t(7));
  gates.at(-1)!();
  await last;
  assert.deepEqual(writes.at(-1), ['img', 7], 'nothing in flight: a touch writes at once');
});

test('a failed write rejects its callers only; the next touch writes again', async () => {
  let fail = true;
  let calls = 0;
  const w = createLatestStampWriter(async () => {
    calls++;
    if (fail) throw new Error('boom');
  });
  const a = w.touch('k', t(1));
  const b = w.touch('k', t(2));
  await assert.rejects(a, /boom/);
  await assert.rejects(b, /boom/, 'the merged write failed too');
  fail = false;
  await w.touch('k', t(3));
  assert.equal(calls, 3);
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { earlyWriteback } from './early-writeback.ts';

describe('earlyWriteback', () => {
  const harness = (fail = false) => {
    const calls: string[] = [];
    const pending: (() => void)[] = [];
    const flush = (dir: string) => {
      calls.push(dir);
      return new Promise<void>((resolve, reject) => pending.push(() => (fail ? reject(new Error('EIO')) : resolve())));
    };
    return { calls, pending, wb: earlyWriteback('/pool/landing', { every: 100, flush }) };
  };

  it('flushes the directory once each `every` bytes, never two at a time', async () => {
    const { calls, pending, wb } = harness();
    wb.onBytes(99);
    assert.deepEqual(calls, []);
    wb.onBytes(100);
    assert.deepEqual(calls, ['/pool/landing']);
    wb.onBytes(250); // one is running: skipped, not queued
    assert.equal(calls.length, 1);
    pending.shift()!();
    await wb.settle();
    wb.onBytes(180); // 80 since the last flush began (at 100)
    assert.equal(calls.length, 1);
    wb.onBytes(200);
    assert.equal(calls.length, 2);
    assert.equal(wb.flushes, 2);
    const settled = wb.settle();
    pending.shift()!();
    await settled;
  });

  it('a failed flush is not an error of the stream, and settle waits for the running one', async () => {
    const { pending, wb } = harness(true);
    wb.onBytes(100);
    let done = false;
    const settled = wb.settle().then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, 'settle waits while the flush runs');
    pending.shift()!();
    await settled;
    assert.equal(done, true);
    wb.onBytes(200);
    assert.equal(wb.flushes, 2, 'the next one runs after a failure');
  });
});

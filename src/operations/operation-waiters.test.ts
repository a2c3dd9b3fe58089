import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OperationRow } from '../desired/schema/index.ts';
import { createManualClock } from '../reconcilers/runtime/clock.ts';
import { createOperationWaiters } from './operation-waiters.ts';
import { StatusCode } from './status.ts';

const row = (statusCode: number) => ({ id: 'op', statusCode }) as OperationRow;

test('a change announced while the row is being read wakes the wait (no re-poll needed)', async () => {
  const clock = createManualClock(0);
  const waiters = createOperationWaiters({ clock });
  let current = row(StatusCode.Running);
  let reads = 0;
  const read = async () => {
    reads++;
    const seen = current;
    // The operation ends while this read is under way: it returns the row as it was.
    if (reads === 1) {
      current = row(StatusCode.Success);
      waiters.wake('op');
    }
    return seen;
  };
  const got = await waiters.wait(read, 'op', 60_000);
  assert.equal(got.statusCode, StatusCode.Success);
  assert.equal(reads, 2);
  assert.equal(clock.now(), 0, 'no time passed: woken, not re-polled');
});

test('a wait re-polls every 2 s, returns the running row at its timeout, and ends on abort', async () => {
  const clock = createManualClock(0);
  const waiters = createOperationWaiters({ clock });
  let reads = 0;
  const read = async () => (reads++, row(StatusCode.Running));
  const timedOut = waiters.wait(read, 'op', 5_000);
  await clock.advance(2_000);
  await clock.advance(2_000);
  await clock.advance(1_000);
  assert.equal((await timedOut).statusCode, StatusCode.Running);
  assert.equal(reads, 4, 'at 0, 2, 4 and 5 s');

  const ac = new AbortController();
  const aborted = waiters.wait(read, 'op', -1, ac.signal);
  await new Promise((r) => setImmediate(r));
  ac.abort();
  assert.equal((await aborted).statusCode, StatusCode.Running);
});

test('a wake reaches every wait on that operation and no other', async () => {
  const clock = createManualClock(0);
  const waiters = createOperationWaiters({ clock });
  const status = new Map<string, number>([
    ['a', StatusCode.Running],
    ['b', StatusCode.Running],
  ]);
  const reader = (id: string) => async () => ({ id, statusCode: status.get(id)! }) as OperationRow;
  let bDone = false;
  const a1 = waiters.wait(reader('a'), 'a', -1);
  const a2 = waiters.wait(reader('a'), 'a', -1);
  void waiters.wait(reader('b'), 'b', 10_000).then(() => (bDone = true));
  await new Promise((r) => setImmediate(r));
  status.set('a', StatusCode.Failure);
  status.set('b', StatusCode.Success);
  waiters.wake('a');
  assert.deepEqual([(await a1).statusCode, (await a2).statusCode], [StatusCode.Failure, StatusCode.Failure]);
  await new Promise((r) => setImmediate(r));
  assert.equal(bDone, false, 'b was not woken');
  await clock.advance(2_000);
  await new Promise((r) => setImmediate(r));
  assert.equal(bDone, true, 'b sees its end at the re-poll');
});

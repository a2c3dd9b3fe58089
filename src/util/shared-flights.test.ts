import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSharedFlights } from './shared-flights.ts';

/** A task that runs until released or aborted, counting its runs. */
function slowTask() {
  let runs = 0;
  let release!: (v: string) => void;
  let aborted = false;
  const task = (signal: AbortSignal) => {
    runs++;
    return new Promise<string>((resolve, reject) => {
      release = resolve;
      signal.addEventListener('abort', () => ((aborted = true), reject(new Error('download aborted'))), { once: true });
    });
  };
  return { task, release: (v: string) => release(v), runs: () => runs, aborted: () => aborted };
}

test('concurrent callers of one key share one run; the first is the leader', async () => {
  const flights = createSharedFlights<string>();
  const t = slowTask();
  const calls = Array.from({ length: 5 }, () => flights.run('img', new AbortController().signal, t.task));
  await new Promise((r) => setImmediate(r));
  t.release('done');
  const got = await Promise.all(calls);
  assert.equal(t.runs(), 1);
  assert.deepEqual(
    got.map((g) => g.leader),
    [true, false, false, false, false],
  );
  assert.ok(got.every((g) => g.value === 'done'));
  assert.equal(flights.size, 0, 'a finished run is forgotten: the next call runs again');
});

test('one caller giving up (even the leader) stops only its own wait; the run goes on for the others', async () => {
  const flights = createSharedFlights<string>();
  const t = slowTask();
  const first = new AbortController();
  const leader = flights.run('img', first.signal, t.task);
  const other = flights.run('img', new AbortController().signal, t.task);
  await new Promise((r) => setImmediate(r));
  first.abort(new Error('operation cancelled'));
  await assert.rejects(leader, /operation cancelled/);
  assert.equal(t.aborted(), false);
  t.release('done');
  assert.deepEqual(await other, { value: 'done', leader: false });
});

test('the run is aborted once every caller gave up', async () => {
  const flights = createSharedFlights<string>();
  const t = slowTask();
  const acs = [new AbortController(), new AbortController()];
  const calls = acs.map((ac) => flights.run('img', ac.signal, t.task));
  await new Promise((r) => setImmediate(r));
  for (const ac of acs) ac.abort(new Error('cancelled'));
  await Promise.all(calls.map((c) => assert.rejects(c, /cancelled/)));
  assert.equal(t.aborted(), true);
});

test('a failed run fails every caller, and a later call runs again', async () => {
  const flights = createSharedFlights<string>();
  let n = 0;
  const failing = async () => {
    n++;
    throw new Error(`hash mismatch ${n}`);
  };
  const calls = [
    flights.run('img', new AbortController().signal, failing),
    flights.run('img', new AbortController().signal, failing),
  ];
  for (const c of calls) await assert.rejects(c, /hash mismatch 1/);
  await assert.rejects(flights.run('img', new AbortController().signal, failing), /hash mismatch 2/);
});

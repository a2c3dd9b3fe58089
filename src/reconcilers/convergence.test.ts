import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Db } from '../db/types.ts';
import { createConvergence } from './convergence.ts';

// watch() reads nothing: a database that throws proves it.
const noDb = new Proxy(
  {},
  {
    get: () => {
      throw new Error('watch must not read the database');
    },
  },
) as unknown as Db;

test('watch: a convergence noted between the watch and until() counts; an older one does not', async () => {
  const conv = createConvergence({ db: noDb, node: 'n1' });
  const w = conv.watch('container', 'a');
  conv.notify('container', 'a', { observed: 7 });
  assert.deepEqual(await w.until(7), { ok: true });
  const later = w.until(8, { timeoutMs: 50 });
  conv.notify('container', 'b', { observed: 9 });
  assert.deepEqual(await later, { ok: false, error: 'timed out waiting for the host to converge', terminal: false });
  w.close();
});

test('watch: terminalOnly waits through retried failures, and ends at a terminal one', async () => {
  const conv = createConvergence({ db: noDb, node: 'n1' });
  const w = conv.watch('container', 'a');
  const plain = conv.watch('container', 'a');
  const waiting = w.until(3, { terminalOnly: true });
  const first = plain.until(3);
  conv.notify('container', 'a', { error: 'busy', terminal: false });
  assert.deepEqual(await first, { ok: false, error: 'busy', terminal: false });
  conv.notify('container', 'a', { observed: 3 });
  assert.deepEqual(await waiting, { ok: true });
  const failing = w.until(4, { terminalOnly: true });
  conv.notify('container', 'a', { error: 'busy', terminal: false });
  conv.notify('container', 'a', { error: 'refused', terminal: true });
  assert.deepEqual(await failing, { ok: false, error: 'refused', terminal: true });
  w.close();
  plain.close();
});

test('watch: an abort ends the wait; close() stops listening', async () => {
  const conv = createConvergence({ db: noDb, node: 'n1' });
  const w = conv.watch('container', 'a');
  const ac = new AbortController();
  const waiting = w.until(2, { signal: ac.signal });
  ac.abort();
  assert.equal((await waiting).ok, false);
  w.close();
  const seen: number[] = [];
  const other = conv.watch('container', 'a');
  void other.until(5).then(() => seen.push(5));
  conv.notify('container', 'a', { observed: 5 });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen, [5]);
  other.close();
});

// wait() first reads how far the key converged: nothing yet.
const emptyDb = { select: () => ({ from: () => ({ where: async () => [] }) }) } as unknown as Db;
const settledWithin = async <T>(p: Promise<T>, ms: number) =>
  Promise.race([p.then((v) => ({ v })), new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);

test('wait: retriesMs waits through retried failures, answers the last one when its time is up, a terminal one at once', async () => {
  const conv = createConvergence({ db: emptyDb, node: 'n1' });
  const turn = () => new Promise((r) => setImmediate(r));
  // A retried failure, then the convergence: ok.
  const through = conv.wait('container', 'a', 2, 5_000, { retriesMs: 1_000 });
  await turn();
  conv.notify('container', 'a', { error: 'busy', terminal: false });
  assert.equal(await settledWithin(through, 50), undefined, 'still waiting after a retried failure');
  conv.notify('container', 'a', { observed: 2 });
  assert.deepEqual(await through, { ok: true });
  // Only failures: the last one, once retriesMs is up.
  const t0 = Date.now();
  const failing = conv.wait('container', 'a', 3, 5_000, { retriesMs: 200 });
  await turn();
  conv.notify('container', 'a', { error: 'busy', terminal: false });
  conv.notify('container', 'a', { error: 'still busy', terminal: false });
  assert.deepEqual(await failing, { ok: false, error: 'still busy', terminal: false });
  assert.ok(Date.now() - t0 >= 190, 'answered when the retries time was up');
  // A terminal failure: at once.
  const refused = conv.wait('container', 'a', 4, 5_000, { retriesMs: 1_000 });
  await turn();
  conv.notify('container', 'a', { error: 'refused', terminal: true });
  assert.deepEqual(await settledWithin(refused, 50), { v: { ok: false, error: 'refused', terminal: true } });
  // Without retriesMs: the first failure, as before.
  const first = conv.wait('container', 'a', 5);
  await turn();
  conv.notify('container', 'a', { error: 'busy', terminal: false });
  assert.deepEqual(await settledWithin(first, 50), { v: { ok: false, error: 'busy', terminal: false } });
});

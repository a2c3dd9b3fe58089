import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTieredClient, type TierClient } from './tiered-client.ts';

/** A postgres.js-like client: queries are lazy thenables that settle when the test says so. */
function fakeClient(name: string, log: string[]) {
  const pending: (() => void)[] = [];
  const client: TierClient = {
    options: { parsers: {}, serializers: {} },
    unsafe(query) {
      let run: Promise<unknown> | undefined;
      const q = {
        then(ok?: (v: unknown) => unknown, ko?: (e: unknown) => unknown) {
          run ??= new Promise((resolve, reject) => {
            log.push(`${name}: ${query}`);
            pending.push(() => (query === 'fail' ? reject(new Error('boom')) : resolve(`${name} answered ${query}`)));
          });
          return run.then(ok, ko);
        },
      };
      return q as PromiseLike<unknown>;
    },
    async begin(fn) {
      log.push(`${name}: begin`);
      return fn(client as never);
    },
    async end() {
      log.push(`${name}: end`);
    },
  };
  return { client, settleAll: () => pending.splice(0).forEach((f) => f()) };
}

test('sequential queries keep to the first client; two at once are pipelined on it, a third goes to the next', async () => {
  const log: string[] = [];
  const p = fakeClient('primary', log);
  const o = fakeClient('overflow', log);
  const t = createTieredClient([p.client, o.client]);
  for (const q of ['a', 'b', 'c']) {
    const r = t.unsafe(q);
    const done = Promise.resolve(r);
    await new Promise((r) => setImmediate(r));
    p.settleAll();
    assert.equal(await done, `primary answered ${q}`);
  }
  assert.deepEqual(log, ['primary: a', 'primary: b', 'primary: c']);
  assert.deepEqual(t.inFlight(), [0, 0]);

  // Two at once (an observer's Promise.all): both on the primary, no second backend for them.
  log.length = 0;
  const both = Promise.all([t.unsafe('x'), t.unsafe('y')]);
  assert.deepEqual(t.inFlight(), [2, 0]);
  await new Promise((r) => setImmediate(r));
  p.settleAll();
  assert.deepEqual(await both, ['primary answered x', 'primary answered y']);
  // Three: the third finds the primary PIPELINE_DEPTH deep.
  const three = Promise.all([t.unsafe('x'), t.unsafe('y'), t.unsafe('z')]);
  assert.deepEqual(t.inFlight(), [2, 1]);
  await new Promise((r) => setImmediate(r));
  p.settleAll();
  o.settleAll();
  assert.deepEqual(await three, ['primary answered x', 'primary answered y', 'overflow answered z']);
  assert.deepEqual(t.inFlight(), [0, 0]);
});

test('a transaction takes a client with nothing in flight; no query goes behind a transaction', async () => {
  const log: string[] = [];
  const cs = ['a', 'b', 'c'].map((n) => fakeClient(n, log));
  const t = createTieredClient(cs.map((c) => c.client));
  const q = Promise.resolve(t.unsafe('q'));
  let release!: () => void;
  const tx = t.begin(() => new Promise<void>((r) => (release = r)));
  assert.deepEqual(t.inFlight(), [1, 1, 0], 'the transaction skipped the client with a query in flight');
  const after = [t.unsafe('r'), t.unsafe('s')].map((x) => Promise.resolve(x));
  assert.deepEqual(t.inFlight(), [2, 1, 1], 'one more behind the query on a; none behind the transaction on b');
  await new Promise((r) => setImmediate(r));
  for (const c of cs) c.settleAll();
  release();
  await Promise.all([q, tx, ...after]);
  assert.deepEqual(t.inFlight(), [0, 0, 0]);
});

test('a failed query and a transaction count as in flight until they end', async () => {
  const log: string[] = [];
  const p = fakeClient('primary', log);
  const o = fakeClient('overflow', log);
  const t = createTieredClient([p.client, o.client]);
  const failing = Promise.resolve(t.unsafe('fail'));
  await new Promise((r) => setImmediate(r));
  p.settleAll();
  await assert.rejects(failing, /boom/);
  assert.deepEqual(t.inFlight(), [0, 0]);

  let release!: () => void;
  const tx = t.begin(() => new Promise<void>((r) => (release = r)));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(t.inFlight(), [1, 0]);
  const during = Promise.resolve(t.unsafe('during'));
  await new Promise((r) => setImmediate(r));
  o.settleAll();
  assert.equal(await during, 'overflow answered during');
  release();
  await tx;
  assert.deepEqual(t.inFlight(), [0, 0]);
  await t.end();
  assert.deepEqual(log.slice(-2), ['primary: end', 'overflow: end']);
});

test("what drizzle sets on the options' parsers and serializers reaches both clients' own tables", () => {
  const p = fakeClient('primary', []);
  const o = fakeClient('overflow', []);
  const pParsers = p.client.options.parsers;
  const oSerializers = o.client.options.serializers;
  const t = createTieredClient([p.client, o.client]);
  const parse = (v: unknown) => v;
  t.options.parsers['1184'] = parse;
  t.options.serializers['3802'] = parse;
  assert.equal(pParsers['1184'], parse);
  assert.equal(o.client.options.parsers['1184'], parse);
  assert.equal(oSerializers['3802'], parse);
  assert.equal(p.client.options.serializers['3802'], parse);
});

test('with every client busy, the least busy one takes the next query', () => {
  const log: string[] = [];
  const cs = ['a', 'b', 'c'].map((n) => fakeClient(n, log));
  const t = createTieredClient(cs.map((c) => c.client));
  const qs = Array.from({ length: 7 }, (_, i) => t.unsafe(`q${i}`));
  assert.deepEqual(t.inFlight(), [3, 2, 2]);
  void qs;
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { useTempDatabase } from '../db/temp-database.ts';
import { reconcileStatus } from '../desired/schema/index.ts';
import { createStatusSettler, openFacts, readFacts } from './status-settler.ts';

const temp = useTempDatabase('svcd-settler-');

const rowOf = async (kind: string, key: string) =>
  (
    await temp.database.db
      .select()
      .from(reconcileStatus)
      .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)))
  )[0];

test('a convergence records the generation, clears the error, and writes the facts handed with it', async () => {
  const { db } = temp.database;
  const settled: [string, string, number][] = [];
  const settler = createStatusSettler({
    db,
    node: 'n1',
    // Settled through the settler's own database, and announced once written.
    ops: {
      convergedIn: async (tx, k, key, g) => (assert.equal(tx, db), () => void settled.push([k, key, g])),
      failed: async () => {},
    },
  });

  await settler.failed('thing', 'a', 'broken', false);
  const record = await openFacts<{ done?: number; kept?: string }>(db, 'thing', 'a');
  record.facts.kept = 'x';
  await record.save();
  record.facts.done = 3;
  record.note();
  const facts = record.take();
  assert.deepEqual(facts, { kept: 'x', done: 3 });
  assert.equal(record.take(), undefined, 'taken once');
  assert.deepEqual(await readFacts(db, 'thing', 'a'), { kept: 'x' }, 'not written by take()');

  await settler.converged('thing', 'a', 5, facts);
  const row = await rowOf('thing', 'a');
  assert.equal(row?.observedGeneration, 5);
  assert.equal(row?.lastError, '');
  assert.deepEqual(row?.facts, { kept: 'x', done: 3 }, 'stored with the convergence');
  assert.deepEqual(await readFacts(db, 'thing', 'a'), { kept: 'x', done: 3 }, 'and read back so');
  assert.deepEqual(settled, [['thing', 'a', 5]], 'the operations were settled');

  await settler.converged('thing', 'a', 4);
  const again = await rowOf('thing', 'a');
  assert.equal(again?.observedGeneration, 5, 'never goes back');
  assert.deepEqual(again?.facts, { kept: 'x', done: 3 }, 'no facts given: the stored ones stay');

  await settler.converged('thing', 'new', 1, { first: true });
  assert.deepEqual((await rowOf('thing', 'new'))?.facts, { first: true }, 'a first convergence with facts');
});

test('notifyFirst: a sync waiter of such a kind is woken before the status write; other kinds after it', async () => {
  const { db } = temp.database;
  const order: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const settler = createStatusSettler({
    db,
    node: 'n1',
    ops: {
      convergedIn: async (_tx, kind) => {
        order.push(`ops ${kind}`);
        await gate;
        return () => {};
      },
      failed: async () => {},
    },
    convergence: {
      notify: (kind, _key, out) => void order.push(`notify ${kind} ${'observed' in out ? out.observed : ''}`),
    },
    notifyFirst: (kind) => kind === 'early',
  });
  const early = settler.converged('early', 'k', 2);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['notify early 2', 'ops early'], 'woken before the writes finished');
  release();
  await early;
  assert.equal((await rowOf('early', 'k'))?.observedGeneration, 2, 'and recorded all the same');

  order.length = 0;
  await settler.converged('late', 'k', 3);
  assert.deepEqual(order, ['ops late', 'notify late 3'], 'woken once written');
});

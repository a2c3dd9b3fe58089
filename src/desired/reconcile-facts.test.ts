import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { openDatabase } from '../db/open-database.ts';
import { useTempDatabase } from '../db/temp-database.ts';
import { forgetFacts, preloadFacts, readFacts, writeFacts } from './reconcile-facts.ts';
import { reconcileStatus } from './schema/index.ts';
import { insertPool, POOL_KIND } from './storage-pools.ts';
import { readMemberFacts, writeMemberFacts } from './member-status.ts';

const temp = useTempDatabase('svcd-facts-');

test('facts: written, read back as copies; forgotten after their row is deleted; a new pool of an old name starts with none', async () => {
  const { db } = temp.database;
  assert.deepEqual(await readFacts(db, 'thing', 'a'), {}, 'none yet');
  await writeFacts(db, 'thing', 'a', { pool: 'p1', nested: { n: 1 } });
  const got = await readFacts(db, 'thing', 'a');
  assert.deepEqual(got, { pool: 'p1', nested: { n: 1 } });
  (got.nested as { n: number }).n = 2;
  got.pool = 'changed by the reader';
  assert.deepEqual(
    await readFacts(db, 'thing', 'a'),
    { pool: 'p1', nested: { n: 1 } },
    'a reader changing its copy changes nothing',
  );
  const [row] = await db
    .select({ facts: reconcileStatus.facts })
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, 'thing'), eq(reconcileStatus.key, 'a')));
  assert.deepEqual(row?.facts, { pool: 'p1', nested: { n: 1 } }, 'stored');

  await db.transaction((tx) => tx.delete(reconcileStatus).where(eq(reconcileStatus.kind, 'thing')));
  forgetFacts(db, 'thing', 'a');
  assert.deepEqual(await readFacts(db, 'thing', 'a'), {}, 'gone with its row');

  // A pool's facts (its mount options, one member's), then the pool is created again under the same name.
  await writeMemberFacts(db, 'n1', POOL_KIND, 'again', { mountOptions: 'compress=zstd' });
  await insertPool(db, { name: 'again', driver: 'dir', description: '', config: {} }, {});
  assert.equal(await readMemberFacts(db, 'n1', POOL_KIND, 'again'), undefined, 'the new pool does not inherit them');
});

test('preloaded facts: every stored key read at once, none read after; a write during the preload wins', async () => {
  const other = await mkdtemp(path.join(os.tmpdir(), 'svcd-facts-preload-'));
  const first = await openDatabase({ stateDir: other });
  await writeFacts(first.db, 'thing', 'stored', { a: 1 });
  await writeFacts(first.db, 'thing', 'raced', { v: 1 });
  await first.close();
  // Opened again: nothing in memory; the facts are on disk.
  const again = await openDatabase({ stateDir: other });
  try {
    const { db } = again;
    await Promise.all([preloadFacts(db), writeFacts(db, 'thing', 'raced', { v: 2 })]);
    assert.deepEqual(await readFacts(db, 'thing', 'raced'), { v: 2 }, 'the write is not undone by the preload');
    // Behind the memory's back: a preloaded database no longer reads.
    await db
      .update(reconcileStatus)
      .set({ facts: { a: 'changed on disk' } })
      .where(and(eq(reconcileStatus.kind, 'thing'), eq(reconcileStatus.key, 'stored')));
    assert.deepEqual(await readFacts(db, 'thing', 'stored'), { a: 1 }, 'from memory');
    await assert.rejects(writeFacts(db, 'thing', 'stored', { unwritable: 1n }));
    assert.deepEqual(
      await readFacts(db, 'thing', 'stored'),
      { a: 'changed on disk' },
      'after a failed write: read, not assumed',
    );
    await writeFacts(db, 'thing', 'stored', { a: 1 });
    await db.insert(reconcileStatus).values({ kind: 'thing', key: 'sneaked', facts: { s: 1 }, updatedAt: new Date() });
    assert.deepEqual(
      await readFacts(db, 'thing', 'sneaked'),
      {},
      'a key not preloaded nor written through here has none',
    );
    forgetFacts(db, 'thing', 'stored');
    assert.deepEqual(await readFacts(db, 'thing', 'stored'), {}, 'forgotten: none');
  } finally {
    await again.close();
    await rm(other, { recursive: true, force: true });
  }
});

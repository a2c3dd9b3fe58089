import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { openDatabase } from '../db/open-database.ts';
import type { Database } from '../db/types.ts';
import { forgetFacts, readFacts, writeFacts } from './reconcile-facts.ts';
import { reconcileStatus } from './schema/index.ts';
import { insertPool, POOL_KIND } from './storage-pools.ts';

let dir: string;
let database: Database;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-facts-'));
  database = await openDatabase({ stateDir: dir });
});
after(async () => {
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

test('facts: written, read back as copies; forgotten after their row is deleted; a new pool of an old name starts with none', async () => {
  const { db } = database;
  assert.deepEqual(await readFacts(db, 'thing', 'a'), {}, 'none yet');
  await writeFacts(db, 'thing', 'a', { pool: 'p1', nested: { n: 1 } });
  const got = await readFacts(db, 'thing', 'a');
  assert.deepEqual(got, { pool: 'p1', nested: { n: 1 } });
  (got.nested as { n: number }).n = 2;
  got.pool = 'changed by the reader';
  assert.deepEqual(await readFacts(db, 'thing', 'a'), { pool: 'p1', nested: { n: 1 } }, 'a reader changing its copy changes nothing');
  const [row] = await db.select({ facts: reconcileStatus.facts }).from(reconcileStatus).where(and(eq(reconcileStatus.kind, 'thing'), eq(reconcileStatus.key, 'a')));
  assert.deepEqual(row?.facts, { pool: 'p1', nested: { n: 1 } }, 'stored');

  await db.transaction((tx) => tx.delete(reconcileStatus).where(eq(reconcileStatus.kind, 'thing')));
  forgetFacts(db, 'thing', 'a');
  assert.deepEqual(await readFacts(db, 'thing', 'a'), {}, 'gone with its row');

  // A pool's facts (its mount options), then the pool is created again under the same name.
  await writeFacts(db, POOL_KIND, 'again', { mountOptions: 'compress=zstd' });
  await insertPool(db, { name: 'again', driver: 'dir', description: '', config: {} }, {});
  assert.deepEqual(await readFacts(db, POOL_KIND, 'again'), {}, 'the new pool does not inherit them');
});

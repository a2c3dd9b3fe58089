import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase } from '../db/open-database.ts';
import type { Database } from '../db/types.ts';
import { cachedRead } from './cached-reads.ts';
import { createProfile, deleteProfile } from './profiles.ts';
import { ensureDefaultProject } from './projects.ts';
import { profiles } from './schema/index.ts';

let dir: string;
let database: Database;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-cached-reads-'));
  database = await openDatabase({ stateDir: dir });
  await ensureDefaultProject(database.db);
});
after(async () => {
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

test('a cached read runs once until a write of its tables; a failed read is not kept; a transaction always reads', async () => {
  const { db } = database;
  let runs = 0;
  // A thenable like a drizzle query: it runs each time it is awaited, so it must be awaited once.
  const readWith = (h: Pick<typeof db, 'select'>) => (): PromiseLike<string[]> => ({
    then(ok, fail) {
      runs++;
      return h.select({ name: profiles.name }).from(profiles).then((rows) => rows.map((r) => r.name).sort()).then(ok, fail);
    },
  });
  const read = readWith(db);
  const first = await cachedRead(db, 'names', ['profiles'], read);
  assert.deepEqual(first, ['default']);
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), first);
  assert.equal(runs, 1, 'read once');

  await createProfile(db, 'default', 'cached', { description: '', config: {}, devices: {} });
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), ['cached', 'default'], 'read again after a write');
  assert.equal(runs, 2);

  await db.transaction(async (tx) => {
    assert.deepEqual(await cachedRead(tx, 'names', ['profiles'], readWith(tx)), ['cached', 'default'], 'inside a transaction: read');
  });
  assert.equal(runs, 3);
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), ['cached', 'default']);
  assert.equal(runs, 3, 'the transaction read changed nothing cached');

  await deleteProfile(db, 'default', 'cached');
  await assert.rejects(cachedRead(db, 'names', ['profiles'], () => Promise.reject(new Error('db gone'))), /db gone/);
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), ['default'], 'the failure was not kept');
  assert.equal(runs, 4);
});

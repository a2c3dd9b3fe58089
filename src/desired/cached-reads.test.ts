import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { MAX_CACHED_READS } from '../db/database-state.ts';
import { cachedContainerSnapshots, cachedImageChoice, cachedLocalRead, cachedRead } from './cached-reads.ts';
import { createAlias, deleteAlias, insertImage, updateAlias } from './images.ts';
import { deleteContainerSnapshotRow, insertContainerSnapshot } from './container-snapshots.ts';
import { insertContainer } from './containers.ts';
import { createProfile, deleteProfile } from './profiles.ts';
import { ensureDefaultProject } from './projects.ts';
import { profiles } from './schema/index.ts';

const temp = useTempDatabase('svcd-cached-reads-', ensureDefaultProject);

test('a cached read runs once until a write of its tables; a failed read is not kept; a transaction always reads', async () => {
  const { db } = temp.database;
  let runs = 0;
  // A thenable like a drizzle query: it runs each time it is awaited, so it must be awaited once.
  const readWith = (h: Pick<typeof db, 'select'>) => (): PromiseLike<string[]> => ({
    then(ok, fail) {
      runs++;
      return h
        .select({ name: profiles.name })
        .from(profiles)
        .then((rows) => rows.map((r) => r.name).sort())
        .then(ok, fail);
    },
  });
  const read = readWith(db);
  const first = await cachedRead(db, 'names', ['profiles'], read);
  assert.deepEqual(first, ['default']);
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), first);
  assert.equal(runs, 1, 'read once');

  await createProfile(db, 'default', 'cached', { description: '', config: {}, devices: {} });
  assert.deepEqual(
    await cachedRead(db, 'names', ['profiles'], read),
    ['cached', 'default'],
    'read again after a write',
  );
  assert.equal(runs, 2);

  await db.transaction(async (tx) => {
    assert.deepEqual(
      await cachedRead(tx, 'names', ['profiles'], readWith(tx)),
      ['cached', 'default'],
      'inside a transaction: read',
    );
  });
  assert.equal(runs, 3);
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), ['cached', 'default']);
  assert.equal(runs, 3, 'the transaction read changed nothing cached');

  await deleteProfile(db, 'default', 'cached');
  await assert.rejects(
    cachedRead(db, 'names', ['profiles'], () => Promise.reject(new Error('db gone'))),
    /db gone/,
  );
  assert.deepEqual(await cachedRead(db, 'names', ['profiles'], read), ['default'], 'the failure was not kept');
  assert.equal(runs, 4);
});

test('cachedLocalRead: any table on the embedded database; the oldest entries go beyond the cap', async () => {
  const { db } = temp.database;
  let runs = 0;
  const read = () => Promise.resolve(++runs);
  assert.equal(await cachedLocalRead(db, 'k0', ['container_snapshots'], read), 1);
  assert.equal(await cachedLocalRead(db, 'k0', ['container_snapshots'], read), 1, 'kept');
  for (let i = 1; i <= MAX_CACHED_READS; i++) await cachedLocalRead(db, `k${i}`, ['container_snapshots'], read);
  const before = runs;
  assert.equal(
    await cachedLocalRead(db, `k${MAX_CACHED_READS}`, ['container_snapshots'], read),
    before,
    'the newest is kept',
  );
  assert.equal(
    await cachedLocalRead(db, 'k0', ['container_snapshots'], read),
    before + 1,
    'the oldest was dropped: read again',
  );
});

test("cachedContainerSnapshots: each container's own rows, fresh after every write of snapshots", async () => {
  const { db } = temp.database;
  const input = {
    description: '',
    architecture: 'x86_64',
    ephemeral: false,
    profiles: ['default'],
    config: {},
    devices: {},
  };
  const [a, b] = await db.transaction(async (tx) => [
    await insertContainer(tx, 'default', 'snaps-a', input, { type: 'none' }, 'stopped'),
    await insertContainer(tx, 'default', 'snaps-b', input, { type: 'none' }, 'stopped'),
  ]);
  assert.notEqual(a!.idmapIndex, b!.idmapIndex, 'each container its own idmap index');
  const names = async (id: string) => (await cachedContainerSnapshots(db, id)).map((s) => s.name);
  assert.deepEqual(await names(a!.id), []);
  const s1 = await insertContainerSnapshot(db, a!, 'snap0');
  assert.deepEqual(await names(a!.id), ['snap0'], 'a new snapshot is seen');
  assert.deepEqual(await names(b!.id), [], "not another container's");
  await insertContainerSnapshot(db, b!, 'snap0');
  await insertContainerSnapshot(db, a!, 'snap1');
  assert.deepEqual(await names(a!.id), ['snap0', 'snap1']);
  assert.deepEqual(await names(b!.id), ['snap0']);
  await deleteContainerSnapshotRow(db, s1.id);
  assert.deepEqual(await names(a!.id), ['snap1'], 'a deleted one is gone');
});

test('cachedImageChoice: what an alias, a fingerprint prefix or properties pick, fresh after image or alias writes', async () => {
  const { db } = temp.database;
  const image = (fingerprint: string, os: string, at: number) => ({
    fingerprint,
    filename: '',
    size: 1,
    architecture: 'x86_64',
    split: false,
    public: false,
    autoUpdate: false,
    cached: false,
    properties: { os },
    createdAt: new Date(at),
    expiresAt: null,
  });
  const fa = 'a'.repeat(64);
  const fb = 'b'.repeat(64);
  await insertImage(db, 'default', image(fa, 'one', 1000), [{ name: 'pick' }]);
  assert.equal((await cachedImageChoice(db, 'default', { alias: 'pick' })).fingerprint, fa);
  assert.equal((await cachedImageChoice(db, 'default', { fingerprint: 'aaaa' })).fingerprint, fa);
  await assert.rejects(cachedImageChoice(db, 'default', { properties: { os: 'two' } }), /No image matches/);
  await insertImage(db, 'default', image(fb, 'two', 2000));
  assert.equal(
    (await cachedImageChoice(db, 'default', { properties: { os: 'two' } })).fingerprint,
    fb,
    'a new image is seen (the miss was not kept)',
  );
  await updateAlias(db, 'default', 'pick', { target: fb, description: '' });
  assert.equal(
    (await cachedImageChoice(db, 'default', { alias: 'pick' })).fingerprint,
    fb,
    'a retargeted alias is followed',
  );
  await deleteAlias(db, 'default', 'pick');
  await assert.rejects(cachedImageChoice(db, 'default', { alias: 'pick' }), /not found/);
  await createAlias(db, 'default', { name: 'pick', target: 'aaaa' });
  assert.equal((await cachedImageChoice(db, 'default', { alias: 'pick' })).fingerprint, fa);
});

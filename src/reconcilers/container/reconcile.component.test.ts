import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { useTempDatabase } from '../../db/temp-database.ts';
import { bumpContainer, insertContainer, markContainerDeleting, readContainerById } from '../../desired/containers.ts';
import { reconcileStatus, storageVolumes } from '../../desired/schema/index.ts';
import { logDirOf, lxcPathOf, stateTrashOf } from '../../host/layout.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { createContainerReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
// The default project, profile and pool, the pool made by its reconciler on the simulator.
const temp = useTempDatabase(
  'svcd-container-rec-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-containers-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

function setup() {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const seen: { id: string; state: string }[] = [];
  const reconciler = createContainerReconciler(
    simContainerDeps({
      db,
      stateDir,
      storage,
      lxc,
      onHostChange: async (id, s) => void seen.push({ id, state: s.state }),
    }),
  );
  return { db, lxc, reconciler, seen, once: createReconcileOnce(db) };
}

const input = {
  description: '',
  architecture: 'x86_64',
  ephemeral: false,
  profiles: ['default'],
  config: {},
  devices: {},
};
const volumeOf = (id: string) => ({ id, type: 'container' as const });
const pool = { name: 'default', driver: 'dir', config: {}, stateDir: '' };
const rowsOf = async (id: string) => temp.database.db.select().from(storageVolumes).where(eq(storageVolumes.id, id));
const start = (db: typeof temp.database.db, id: string, seq: number) =>
  bumpContainer(db, id, { power: 'running', powerRequest: { action: 'start', force: false, timeout: -1, seq } });

test('a new container gets its root volume, volume row and LXC config, stays stopped, and a second reconcile changes nothing', async () => {
  const { db, lxc, reconciler, seen, once } = setup();
  const c = await insertContainer(db, 'default', 'c-create', input, { type: 'none' }, 'stopped');
  assert.equal((await once(reconciler, c.id)).observedGeneration, c.generation);
  assert.ok(await storage.volumeExists(pool, volumeOf(c.id)));
  assert.ok(existsSync(path.join(storage.volumePath(pool, volumeOf(c.id)), 'rootfs')));
  assert.deepEqual(
    (await rowsOf(c.id)).map((r) => [r.name, r.pool, r.type]),
    [['c-create', 'default', 'container']],
  );
  assert.match(readFileSync(path.join(lxcPathOf(stateDir), c.id, 'config'), 'utf8'), /lxc\.uts\.name = c-create/);
  assert.equal(lxc.containers.get(c.id), undefined, 'never started');
  const calls = { ...storage.calls };
  await once(reconciler, c.id);
  assert.equal(storage.calls.ensureVolume, calls.ensureVolume, 'the volume is not made again');
  assert.equal(lxc.calls.start, undefined);
  assert.deepEqual(
    seen.map((s) => s.state),
    ['STOPPED', 'STOPPED'],
  );
});

test("a start runs it with the config written, once; killed or frozen behind svcd's back, it is brought back", async () => {
  const { db, lxc, reconciler, once } = setup();
  const c = await insertContainer(db, 'default', 'c-drift', input, { type: 'none' }, 'stopped');
  await once(reconciler, c.id);
  await start(db, c.id, 1);
  await once(reconciler, c.id);
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING');
  assert.equal(sim.startedWith, readFileSync(path.join(lxcPathOf(stateDir), c.id, 'config'), 'utf8'));
  await once(reconciler, c.id);
  assert.equal(lxc.calls.start, 1, 'a running container is not started again');
  lxc.kill(c.id);
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'RUNNING');
  assert.equal(lxc.calls.start, 2);
  lxc.freezeBehind(c.id);
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'RUNNING', 'thawed: desired running');
  assert.equal(lxc.calls.unfreeze, 1);
});

test('a start that fails is retried and starts it once; a failed volume creation is finished by the retry', async () => {
  const { db, lxc, reconciler, once } = setup();
  const c = await insertContainer(db, 'default', 'c-crash', input, { type: 'none' }, 'running');
  await start(db, c.id, 1);
  storage.failOnce('ensureVolume');
  await assert.rejects(once(reconciler, c.id), /simulated failure of ensureVolume/);
  assert.equal(await storage.volumeExists(pool, volumeOf(c.id)), false);
  assert.deepEqual(await rowsOf(c.id), [], 'no volume row before the volume exists');
  lxc.failOnce('start');
  await assert.rejects(once(reconciler, c.id), /simulated failure of start/);
  assert.ok(await storage.volumeExists(pool, volumeOf(c.id)));
  assert.equal(lxc.containers.get(c.id), undefined);
  const row = (await readContainerById(db, c.id))!;
  assert.equal((await once(reconciler, c.id)).observedGeneration, row.generation);
  assert.equal(lxc.containers.get(c.id)!.state, 'RUNNING');
  assert.equal(lxc.calls.start, 2, 'one failed start, one start');
  assert.equal((await rowsOf(c.id)).length, 1);
});

test('freeze, stop, and delete: the container is stopped, its volume, rows and LXC directory go, and its logs stay', async () => {
  const { db, lxc, reconciler, once } = setup();
  const c = await insertContainer(db, 'default', 'c-delete', input, { type: 'none' }, 'running');
  await start(db, c.id, 1);
  await once(reconciler, c.id);
  await bumpContainer(db, c.id, { power: 'frozen' });
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'FROZEN');
  await bumpContainer(db, c.id, {
    power: 'stopped',
    powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 },
  });
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'STOPPED');
  await start(db, c.id, 3);
  await once(reconciler, c.id);
  assert.ok(existsSync(path.join(lxcPathOf(stateDir), c.id)) && existsSync(logDirOf(stateDir, c)));
  await markContainerDeleting(db, (await readContainerById(db, c.id))!);
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'STOPPED', 'stopped before its removal');
  assert.equal(await storage.volumeExists(pool, volumeOf(c.id)), false);
  assert.deepEqual(await rowsOf(c.id), []);
  assert.equal(await readContainerById(db, c.id), undefined);
  assert.equal(existsSync(path.join(lxcPathOf(stateDir), c.id)), false);
  assert.ok(existsSync(logDirOf(stateDir, c)), "a deleted container's logs can still be read");
  // The LXC directory was renamed into the state dir's trash, emptied in the background.
  for (let i = 0; i < 100 && readdirSync(stateTrashOf(stateDir)).length > 0; i++)
    await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(readdirSync(stateTrashOf(stateDir)), []);
  assert.deepEqual(
    await db.select().from(reconcileStatus).where(eq(reconcileStatus.key, c.id)),
    [],
    'no status row left behind',
  );
  assert.deepEqual(await once(reconciler, c.id), {}, 'a removed container is nothing to do');
});

test("a container another member holds is left alone here, and its release runs; this member's own converges", async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const released: string[] = [];
  const deps = simContainerDeps({ db, stateDir, storage, lxc });
  const reconciler = createContainerReconciler({
    ...deps,
    ownership: { release: async (id) => void released.push(id) },
  });
  const once = createReconcileOnce(db);
  const theirs = await insertContainer(
    db,
    'default',
    'c-theirs',
    { ...input, location: 'elsewhere' },
    { type: 'none' },
    'stopped',
  );
  assert.deepEqual(await once(reconciler, theirs.id), {});
  assert.deepEqual(released, [theirs.id]);
  assert.equal(await storage.volumeExists(pool, volumeOf(theirs.id)), false, 'no root volume made for it here');
  const ours = await insertContainer(
    db,
    'default',
    'c-ours',
    { ...input, location: deps.node },
    { type: 'none' },
    'stopped',
  );
  assert.equal((await once(reconciler, ours.id)).observedGeneration, ours.generation);
  assert.ok(await storage.volumeExists(pool, volumeOf(ours.id)));
  assert.deepEqual(released, [theirs.id]);
});

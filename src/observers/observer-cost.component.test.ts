/**
 * What a tick costs with N containers: processes (simulator calls that spawn on a real host) and
 * database statements must not grow with N; a resync reconcile of a converged running container costs
 * reads only, and the same number of statements whatever N.
 */
import { createInitExitAdapter } from '../host/lxc/observer-adapters.ts';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { after, test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { insertContainer } from '../desired/containers.ts';
import { createEventBus } from '../events/index.ts';
import { lxcPathOf } from '../host/layout.ts';
import { createLiveRegistry } from '../reconcilers/container/ensure-live.ts';
import { createContainerReconciler } from '../reconcilers/container/reconcile.ts';
import { countQueries } from '../test-support/count-queries.ts';
import { createReconcileOnce } from '../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../test-support/sim-container-deps.ts';
import { createSimLxc } from '../test-support/sim-lxc.ts';
import type { SimStorage } from '../test-support/sim-storage.ts';
import { createContainerObserver } from './container-observer.ts';
import { createLiveDriftObserver } from './live-drift-observer.ts';
import { createNetworkObserver } from './network-observer.ts';
import { createPoolObserver } from './pool-observer.ts';
import { createProxyDriftObserver } from './proxy-drift-observer.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-observer-cost-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-cost-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

/** Calls of the LXC simulator that are a process on a real host (lxc-ls, lxc-start, ip, tc, nft...) or change something. */
const SPAWNING_OR_WRITING = [
  'list',
  'start',
  'stop',
  'freeze',
  'unfreeze',
  'removeLeftovers',
  'attachMount',
  'detachMount',
  'attachNic',
  'detachNic',
  'rejoinBridge',
  'adoptNic',
  'applyNicLimits',
  'applyNicFilter',
  'applyNicRoutes',
  'attachInsideNic',
  'detachInsideNic',
  'setDeviceAccess',
];
const STORAGE_WRITES = [
  'ensureVolume',
  'removeVolume',
  'ensurePool',
  'removePool',
  'copyVolume',
  'createSnapshot',
  'removeSnapshot',
  'restoreSnapshot',
  'resizeVolume',
];
const delta = (
  after: Record<string, number>,
  before: Record<string, number>,
  names: string[],
): Record<string, number> =>
  Object.fromEntries(names.map((n) => [n, (after[n] ?? 0) - (before[n] ?? 0)] as const).filter(([, d]) => d !== 0));

test('with 3 and then 30 running containers, a tick of every observer and a resync reconcile cost the same processes and queries', async () => {
  const { db, localWrites } = temp.database;
  const lxc = createSimLxc();
  const live = createLiveRegistry();
  const reconciler = createContainerReconciler({ ...simContainerDeps({ db, stateDir, storage, lxc }), live });
  const once = createReconcileOnce(db);
  const reports: string[] = [];
  const report = (_k: string, key: string, what: string) => void reports.push(`${key}: ${what}`);
  // The sample looks at every container up to perTick, beyond at a slice of perTick of them.
  const listed: number[] = [];
  const list: typeof lxc.list = async (p, signal, names) => (
    listed.push(names?.length ?? -1), lxc.list(p, signal, names)
  );
  const observer = createContainerObserver({
    db,
    localWrites,
    lxc: { state: lxc.state, list },
    node: 'n1',
    lxcPath: lxcPathOf(stateDir),
    initExit: createInitExitAdapter(),
    stateDir,
    bus: createEventBus({ location: 'n1' }),
    report,
    reportAfter: report as never,
    perTick: 10,
  });
  const others = [
    createLiveDriftObserver({ live, look: lxc, report }),
    createProxyDriftObserver({ live, proxy: { liveForwarders: async () => new Map<string, number>() }, report }),
    createNetworkObserver({ db, stateDir, network: { health: async () => undefined }, report }),
    createPoolObserver({ db, node: 'n1', stateDir, driverFor: storage.driverFor, report }),
  ];
  const queries = countQueries(db);
  const input = {
    location: 'n1',
    description: '',
    architecture: 'x86_64',
    ephemeral: false,
    profiles: ['default'],
    config: { 'limits.memory': '64MiB' },
    devices: {},
  };
  const costs: {
    n: number;
    tick: Record<string, number>;
    listed: number;
    resyncPerContainer: number;
    resyncCalls: Record<string, number>;
  }[] = [];
  const ids: string[] = [];
  for (const n of [3, 30]) {
    while (ids.length < n) {
      const c = await insertContainer(db, 'default', `cost-${ids.length}`, input, { type: 'none' }, 'running');
      await once(reconciler, c.id);
      ids.push(c.id);
    }
    assert.equal([...lxc.containers.values()].filter((s) => s.state === 'RUNNING').length, n);
    await observer.sample(new AbortController().signal); // the first look at the new ones writes their rows
    await observer.sample(new AbortController().signal); // which are read again once
    for (const o of others) await o.sample(new AbortController().signal); // what they read is remembered from here on
    const tick: Record<string, number> = {};
    for (const o of [observer, ...others]) {
      const before = { ...lxc.calls };
      queries.reset();
      await o.sample(new AbortController().signal);
      tick[`${o.name} queries`] = queries.count;
      tick[`${o.name} processes`] = Object.values(delta(lxc.calls, before, [...SPAWNING_OR_WRITING, 'state'])).reduce(
        (a, b) => a + b,
        0,
      );
    }
    const containersListed = listed.at(-1)!;
    // A resync: every converged running container reconciled again.
    const lxcBefore = { ...lxc.calls };
    const storageBefore = { ...storage.calls };
    queries.reset();
    for (const id of ids) assert.equal((await once(reconciler, id)).observedGeneration !== undefined, true);
    costs.push({
      n,
      tick,
      listed: containersListed,
      resyncPerContainer: queries.count / n,
      resyncCalls: {
        ...delta(lxc.calls, lxcBefore, SPAWNING_OR_WRITING),
        ...delta(storage.calls, storageBefore, STORAGE_WRITES),
      },
    });
  }
  queries.restore();
  const [small, big] = costs as [(typeof costs)[number], (typeof costs)[number]];
  assert.deepEqual(big.tick, small.tick, 'a tick costs the same with 30 containers as with 3');
  assert.deepEqual(
    [small.listed, big.listed],
    [3, 10],
    'the sample reads the state of all 3, then of a slice of 10 of the 30',
  );
  assert.equal(
    small.tick['containers processes'],
    1,
    'the container sample is one listing (spawn-free on a real host: host-states.ts)',
  );
  assert.equal(
    small.tick['containers queries'],
    0,
    'nothing written since the last sample: no rows read (PGlite counts its own writes)',
  );
  for (const o of ['live-config', 'proxy-forwarders', 'networks'])
    assert.equal(small.tick[`${o} queries`], 0, `${o}: nothing read while nothing was written`);
  assert.deepEqual(small.resyncCalls, {}, 'a converged running container: nothing started, written or spawned');
  assert.deepEqual(big.resyncCalls, {});
  assert.equal(big.resyncPerContainer, small.resyncPerContainer, 'the same statements per container whatever N');
  assert.deepEqual(reports, [], 'nothing drifted');
  // The slices reach every container: one killed behind svcd's back (and its event lost) is seen within ceil(30/10) ticks.
  lxc.kill(ids[17]!);
  for (let i = 0; i < 3 && reports.length === 0; i++) await observer.sample(new AbortController().signal);
  assert.equal(reports.length, 1, JSON.stringify(reports));
  assert.match(reports[0]!, new RegExp(`^${ids[17]}: observed STOPPED, desired running`));
});

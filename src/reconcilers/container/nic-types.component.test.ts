import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { useTempDatabase } from '../../db/temp-database.ts';
import { bumpContainer, bumpContainerAt, insertContainer, readContainerById } from '../../desired/containers.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { createHostDevicesAdapter } from '../../host/devices/host-devices-adapter.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import { createSimNetwork } from '../../test-support/sim-network.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { defaultHostName } from './device-specs.ts';
import { isTerminalError } from '../runtime/index.ts';
import { createContainerReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-t17-nictypes-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-t17-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

const base = { description: '', architecture: 'x86_64', ephemeral: false, profiles: ['default'], config: {} };

test('t17 macvlan, p2p and physical nics: at start, live attach and detach, physical given back on detach and before a stop', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  lxc.links.add('t17a1').add('t17p1').add('t17p2');
  const reconciler = createContainerReconciler(
    simContainerDeps({ db, stateDir, storage, lxc, network: createSimNetwork({ bridges: lxc.bridges }) }),
  );
  const once = createReconcileOnce(db);
  const devices = {
    m0: { type: 'nic', nictype: 'macvlan', parent: 't17a1', mtu: '1400' },
    p0: { type: 'nic', nictype: 'p2p', 'ipv4.routes': '10.9.0.0/24' },
    f0: { type: 'nic', nictype: 'physical', parent: 't17p1', name: 'eth5' },
  };
  const c = await insertContainer(db, 'default', 'nt', { ...base, devices }, { type: 'none' }, 'stopped');
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await once(reconciler, c.id);
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING');
  const hostP0 = defaultHostName(c.id, 'p0');
  assert.deepEqual(sim.nics.get('m0'), {
    hwaddr: c.config['volatile.m0.hwaddr'],
    hostName: '',
    parent: 't17a1',
    kind: 'macvlan',
    byLxc: true,
    mtu: 1400,
  });
  assert.deepEqual(
    sim.nics.get('eth5'),
    { hwaddr: '', hostName: '', parent: 't17p1', kind: 'physical', byLxc: true },
    'a physical nic keeps its MAC',
  );
  assert.equal(c.config['volatile.f0.hwaddr'], undefined);
  assert.equal(lxc.links.has('t17p1'), false, 'moved into the container');
  assert.deepEqual(
    lxc.veths.get(hostP0),
    { container: c.id, peer: 'p0', master: '' },
    'the p2p host side is on no bridge',
  );
  assert.deepEqual([...lxc.routes], [`10.9.0.0/24 dev ${hostP0}`]);

  // Live: the physical nic goes (given back), another comes in, the macvlan changes MTU (made again).
  let row = (await readContainerById(db, c.id))!;
  const { f0: _f0, ...rest } = row.devices;
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { ...rest, m0: { ...rest.m0!, mtu: '1300' }, f1: { type: 'nic', nictype: 'physical', parent: 't17p2' } },
  });
  await once(reconciler, c.id);
  assert.equal(lxc.calls.start, 1, 'not restarted');
  assert.equal(lxc.links.has('t17p1'), true, 'given back on detach');
  assert.equal(lxc.links.has('t17p2'), false);
  assert.equal(sim.nics.get('f1')?.kind, 'physical');
  assert.equal(sim.nics.get('m0')?.mtu, 1300);
  assert.equal(sim.nics.has('eth5'), false);
  const attached = lxc.calls.attachInsideNic;
  await once(reconciler, c.id);
  assert.equal(lxc.calls.attachInsideNic, attached, 'converged: nothing attached again');

  // Drift: the macvlan deleted behind svcd's back is made again.
  sim.nics.delete('m0');
  await once(reconciler, c.id);
  assert.equal(sim.nics.get('m0')?.kind, 'macvlan');

  // A stop: the physical nic svcd moved in live is given back first (with the netns it would be lost).
  await bumpContainer(db, c.id, {
    power: 'stopped',
    powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 },
  });
  await once(reconciler, c.id);
  assert.equal(sim.state, 'STOPPED');
  assert.equal(lxc.links.has('t17p2'), true);
  assert.equal(lxc.routes.size, 0, 'the p2p routes went');
});

test('t17 a macvlan or physical parent gone since the write: the start fails naming it, nothing started', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const reconciler = createContainerReconciler(
    simContainerDeps({ db, stateDir, storage, lxc, network: createSimNetwork({ bridges: lxc.bridges }) }),
  );
  const once = createReconcileOnce(db);
  const c = await insertContainer(
    db,
    'default',
    'gone',
    { ...base, devices: { f0: { type: 'nic', nictype: 'physical', parent: 't17gone' } } },
    { type: 'none' },
    'stopped',
  );
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await assert.rejects(
    once(reconciler, c.id),
    (e: Error) =>
      isTerminalError(e) &&
      /nic "f0": host interface "t17gone" \(the physical nic's parent\) does not exist/.test(e.message),
  );
  assert.equal(lxc.calls.start, undefined);
  lxc.links.add('t17gone');
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)?.state, 'RUNNING');
});

test('t17 sriov at start: a TerminalError naming the parent and what it lacks', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const reconciler = createContainerReconciler(
    simContainerDeps({ db, stateDir, storage, lxc, network: createSimNetwork({ bridges: lxc.bridges }) }),
  );
  const once = createReconcileOnce(db);
  const c = await insertContainer(
    db,
    'default',
    'ns',
    { ...base, devices: { s0: { type: 'nic', nictype: 'sriov', parent: 'lo' } } },
    { type: 'none' },
    'stopped',
  );
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await assert.rejects(
    once(reconciler, c.id),
    (e: Error) =>
      isTerminalError(e) &&
      /nic "s0": nictype=sriov is not available on parent "lo": no \/sys\/class\/net\/lo\/device\/sriov_totalvfs/.test(
        e.message,
      ),
  );
  assert.equal(lxc.calls.start, undefined);
});

test('t17 a physical nic moved in live whose container died on its own: back under its own name before the restart takes it again', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  lxc.links.add('t17q1');
  const reconciler = createContainerReconciler(
    simContainerDeps({ db, stateDir, storage, lxc, network: createSimNetwork({ bridges: lxc.bridges }) }),
  );
  const once = createReconcileOnce(db);
  const c = await insertContainer(db, 'default', 'died', { ...base, devices: {} }, { type: 'none' }, 'stopped');
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await once(reconciler, c.id);
  let row = (await readContainerById(db, c.id))!;
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { ...row.devices, f1: { type: 'nic', nictype: 'physical', parent: 't17q1', name: 'eth7' } },
  });
  await once(reconciler, c.id);
  assert.equal(lxc.links.has('t17q1'), false, 'moved in live');

  // Its init dies: the kernel gives the interface back under its inside name.
  lxc.kill(c.id);
  assert.equal(lxc.links.has('eth7'), true);
  await once(reconciler, c.id);
  assert.equal(lxc.calls.reclaimPhysical, 1);
  assert.equal(lxc.links.has('eth7'), false, 'no longer under its inside name on the host');
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING', 'started again (desired running)');
  assert.equal(sim.nics.get('eth7')?.parent, 't17q1', 'and LXC moved it in at the start, by its own name');
});

test("t17 infiniband nictype=physical: its interface moved in like a physical nic, its port's nodes passed through; while it is inside, the recorded port says which", async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  lxc.links.add('ib1');
  // A fake sysfs: HCA mlx5_0, whose port 2 is the IPoIB interface ib1.
  const sys = await mkdtemp(path.join(os.tmpdir(), 'svcd-t17-ib-'));
  after(() => rm(sys, { recursive: true, force: true }));
  const put = async (file: string, text: string | number) => {
    await mkdir(path.dirname(path.join(sys, file)), { recursive: true });
    await writeFile(path.join(sys, file), `${text}\n`);
  };
  await mkdir(path.join(sys, 'class/infiniband/mlx5_0'), { recursive: true });
  await mkdir(path.join(sys, 'class/net/ib1/device/infiniband/mlx5_0'), { recursive: true });
  await put('class/net/ib1/dev_port', '1');
  await put('class/infiniband_verbs/uverbs0/ibdev', 'mlx5_0');
  await put('class/infiniband_verbs/uverbs0/dev', '231:192');
  for (const [n, port, minor] of [
    ['umad0', '1', 0],
    ['umad1', '2', 1],
  ] as [string, string, number][]) {
    await put(`class/infiniband_mad/${n}/ibdev`, 'mlx5_0');
    await put(`class/infiniband_mad/${n}/port`, port);
    await put(`class/infiniband_mad/${n}/dev`, `231:${minor}`);
  }
  const reconciler = createContainerReconciler({
    ...simContainerDeps({ db, stateDir, storage, lxc }),
    hostDevices: createHostDevicesAdapter({ sysRoot: sys, devRoot: path.join(sys, 'dev') }),
  });
  const once = createReconcileOnce(db);
  const c = await insertContainer(
    db,
    'default',
    'ib',
    { ...base, devices: { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib1', name: 'ib0' } } },
    { type: 'none' },
    'stopped',
  );
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await once(reconciler, c.id);
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING');
  assert.deepEqual(
    sim.nics.get('ib0'),
    { hwaddr: '', hostName: '', parent: 'ib1', kind: 'physical', byLxc: true },
    'the IPoIB interface moved in as ib0',
  );
  assert.equal(lxc.links.has('ib1'), false);
  // The verbs node of mlx5_0 and the management node of port 2, allowed and mounted at /dev/infiniband.
  for (const rule of ['c 231:192 rwm', 'c 231:1 rwm'])
    assert.match(sim.startedWith!, new RegExp(`devices.allow = ${rule}`));
  assert.doesNotMatch(sim.startedWith!, /c 231:0 rwm/, "not port 1's");
  for (const node of ['uverbs0', 'umad1'])
    assert.match(sim.startedWith!, new RegExp(`lxc.mount.entry = \\S+ dev/infiniband/${node} `));

  // Inside the container, the interface is gone from the host's sysfs: the recorded port still names the nodes.
  await rm(path.join(sys, 'class/net/ib1'), { recursive: true });
  await once(reconciler, c.id);
  assert.equal(lxc.calls.start, 1, 'not restarted');
  assert.deepEqual([...sim.mounts.keys()].filter((t) => t.startsWith('/dev/infiniband/')).sort(), [
    '/dev/infiniband/umad1',
    '/dev/infiniband/uverbs0',
  ]);
  // Without the record, a running container's infiniband device could not be told apart from a missing one.
  const row = (await readContainerById(db, c.id))!;
  await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { ib: { type: 'infiniband', nictype: 'physical', parent: 'ib7', name: 'ib0' } },
  });
  await assert.rejects(
    once(reconciler, c.id),
    (e: Error) =>
      isTerminalError(e) && /infiniband "ib": host interface "ib7" is not an InfiniBand interface/.test(e.message),
  );
});

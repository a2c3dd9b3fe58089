/**
 * The whole container reconciler on simulators only: LXC (lifecycle, cgroups, mounts, nics), the storage
 * driver, device nodes and the host's devices. A container is created, started, changed live (limits, a
 * unix-char device, a host-path disk, a nic on a host bridge), repaired after drift, stopped and deleted;
 * every step is asserted on what the simulators show, as a host would show it.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { useTempDatabase } from '../../db/temp-database.ts';
import { bumpContainer, insertContainer, markContainerDeleting, readContainerById } from '../../desired/containers.ts';
import { lxcPathOf } from '../../host/layout.ts';
import { createLiveDriftObserver } from '../../observers/live-drift-observer.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimDeviceNodes } from '../../test-support/sim-device-nodes.ts';
import { createSimHostDevices } from '../../test-support/sim-host-devices.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { createLiveRegistry } from './ensure-live.ts';
import { createContainerReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-seam-lifecycle-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-seam-sim-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

const base = { description: '', architecture: 'x86_64', ephemeral: false, profiles: ['default'] };
const pool = { name: 'default', driver: 'dir', config: {}, stateDir: '' };

test('create, start, live limits, devices and nics, drift repaired, stop and delete: all on simulators', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  lxc.bridges.add('seambr0');
  const hostDevices = createSimHostDevices({ links: { seambr0: 'bridge' }, paths: { '/srv/seam-data': 'dir' } });
  const deviceNodes = createSimDeviceNodes({ '/dev/fuse': { type: 'char', major: 10, minor: 229 } });
  const live = createLiveRegistry();
  const reconciler = createContainerReconciler({
    ...simContainerDeps({ db, stateDir, storage, lxc, deviceNodes, hostDevices }),
    live,
  });
  const once = createReconcileOnce(db);
  const update = async (id: string, set: Parameters<typeof bumpContainer>[2]) => {
    const row = await bumpContainer(db, id, set);
    assert.equal((await once(reconciler, id)).observedGeneration, row.generation);
  };

  // Created stopped: its volume and config, nothing running.
  const c = await insertContainer(
    db,
    'default',
    'seam-c1',
    { ...base, config: { 'limits.memory': '64MiB' }, devices: {} },
    { type: 'none' },
    'stopped',
  );
  await once(reconciler, c.id);
  assert.ok(await storage.volumeExists(pool, { id: c.id, type: 'container' }));
  assert.equal(lxc.containers.get(c.id), undefined);

  // Started: running with the config written, its memory limit in its cgroup.
  await update(c.id, { power: 'running', powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 } });
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING');
  assert.match(sim.startedWith!, /lxc\.cgroup\.memory\.limit_in_bytes = 67108864/);
  const memFile = `/sim/cgroup/memory/lxc.payload.${c.id}/memory.limit_in_bytes`;
  assert.equal(sim.cgroup.get(memFile), '67108864');

  // Live: a new limit, a unix-char device, a host-path disk and a nic on a host bridge reach it without a restart.
  const devices = {
    fuse: { type: 'unix-char', source: '/dev/fuse' },
    data: { type: 'disk', source: '/srv/seam-data', path: '/mnt/data', readonly: 'true' },
    eth1: { type: 'nic', nictype: 'bridged', parent: 'seambr0', name: 'eth1', 'limits.ingress': '10Mbit' },
  };
  await update(c.id, { config: { 'limits.memory': '128MiB' }, devices });
  assert.equal(lxc.containers.get(c.id)!.pid, sim.pid, 'not restarted');
  assert.equal(sim.cgroup.get(memFile), String(128 * 1024 * 1024));
  const nodeDir = path.join(lxcPathOf(stateDir), c.id, 'devices');
  const [node] = [...deviceNodes.made.values()];
  assert.deepEqual(
    node && [path.dirname(node.path), node.type, node.major, node.minor],
    [nodeDir, 'char', 10, 229],
    'the node made in its devices directory',
  );
  assert.equal(sim.cgroup.get(`/sim/cgroup/devices/lxc.payload.${c.id}/devices.allow`), 'c 10:229 rwm');
  assert.deepEqual(
    [...sim.mounts].sort(([a], [b]) => (a < b ? -1 : 1)),
    [
      ['/dev/fuse', { readonly: false, source: node!.path }],
      ['/mnt/data', { readonly: true, source: '/srv/seam-data' }],
    ],
  );
  const eth1 = sim.nics.get('eth1');
  assert.ok(eth1, 'the nic attached live');
  assert.deepEqual(lxc.veths.get(eth1.hostName), { container: c.id, peer: 'eth1', master: 'seambr0' });
  assert.equal(lxc.nicLimits.get(eth1.hostName)?.ingressBits, 10_000_000);
  assert.deepEqual(live.get(c.id)?.pendingRestart, []);

  // Drift behind svcd's back: the observer reports it, the next reconcile puts it back.
  sim.cgroup.set(memFile, '1048576');
  sim.mounts.delete('/mnt/data');
  const reports: string[] = [];
  const observer = createLiveDriftObserver({
    live,
    look: lxc,
    report: (_k, key, what) => void reports.push(key + what),
  });
  await observer.sample(new AbortController().signal);
  assert.deepEqual(reports, [`${c.id}cgroup memory.limit_in_bytes changed`]);
  await once(reconciler, c.id);
  assert.equal(sim.cgroup.get(memFile), String(128 * 1024 * 1024));
  assert.deepEqual(sim.mounts.get('/mnt/data'), { readonly: true, source: '/srv/seam-data' });

  // A host path that went: the device is refused by name, the running container is left as it was.
  hostDevices.paths.delete('/srv/seam-data');
  const gone = await bumpContainer(db, c.id, { devices: { ...devices, data: { ...devices.data, path: '/mnt/d2' } } });
  await assert.rejects(once(reconciler, c.id), /disk "data": host path "\/srv\/seam-data" does not exist/);
  assert.equal(lxc.containers.get(c.id)!.pid, sim.pid);
  hostDevices.paths.set('/srv/seam-data', 'dir');
  assert.equal((await once(reconciler, c.id)).observedGeneration, gone.generation);
  assert.ok(sim.mounts.has('/mnt/d2') && !sim.mounts.has('/mnt/data'), 'moved to its new path');

  // Devices removed live: unmounted, denied, the node and the nic gone.
  await update(c.id, { devices: {} });
  assert.deepEqual([...sim.mounts.keys()], []);
  assert.equal(sim.cgroup.get(`/sim/cgroup/devices/lxc.payload.${c.id}/devices.deny`), 'c 10:229 rwm');
  assert.deepEqual([...deviceNodes.made.keys()], []);
  assert.equal(sim.nics.has('eth1'), false);
  assert.equal(lxc.veths.has(eth1.hostName), false);
  assert.equal(lxc.nicLimits.has(eth1.hostName), false, 'its limits went with it');

  // Stopped, then deleted: nothing of it is left on the simulated host.
  await update(c.id, { power: 'stopped', powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 } });
  assert.equal(lxc.containers.get(c.id)!.state, 'STOPPED');
  assert.equal(live.get(c.id), undefined);
  await markContainerDeleting(db, (await readContainerById(db, c.id))!);
  await once(reconciler, c.id);
  assert.equal(await readContainerById(db, c.id), undefined);
  assert.equal(await storage.volumeExists(pool, { id: c.id, type: 'container' }), false);
  assert.equal(existsSync(path.join(lxcPathOf(stateDir), c.id)), false);
});

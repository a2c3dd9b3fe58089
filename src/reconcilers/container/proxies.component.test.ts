import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { after, test } from 'node:test';
import { useTempDatabase } from '../../db/temp-database.ts';
import {
  bumpContainer,
  bumpContainerAt,
  insertContainer,
  markContainerDeleting,
  readContainerById,
} from '../../desired/containers.ts';
import { recordMemberConverged } from '../../desired/member-status.ts';
import { networks } from '../../desired/schema/index.ts';
import { networkDirOf } from '../../host/layout.ts';
import { createProxyDriftObserver } from '../../observers/proxy-drift-observer.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import { createSimNetwork } from '../../test-support/sim-network.ts';
import { createSimProxy } from '../../test-support/sim-proxy.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { isTerminalError } from '../runtime/index.ts';
import { createLiveRegistry } from './ensure-live.ts';
import { createContainerReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-container-proxies-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-proxies-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

const base = { description: '', architecture: 'x86_64', ephemeral: false, profiles: ['default'], config: {} };
const web = { type: 'proxy', listen: 'tcp:127.0.0.1:8080', connect: 'tcp:127.0.0.1:80' };
const start = (seq: number) => ({
  power: 'running' as const,
  powerRequest: { action: 'start' as const, force: false, timeout: -1, seq },
});

test('t17 proxies follow the container: started with its init pid, repaired when dead, changed, removed live, stopped with it', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const proxy = createSimProxy();
  const live = createLiveRegistry();
  const reconciler = createContainerReconciler({ ...simContainerDeps({ db, stateDir, storage, lxc }), proxy, live });
  const once = createReconcileOnce(db);
  const c = await insertContainer(db, 'default', 'p1', { ...base, devices: { web } }, { type: 'none' }, 'stopped');
  await bumpContainer(db, c.id, start(1));
  await once(reconciler, c.id);
  const pid = lxc.containers.get(c.id)!.pid;
  const fw = () => proxy.forwarders.get(c.id)?.get('web');
  assert.deepEqual(fw()?.spec, {
    containerId: c.id,
    device: 'web',
    listenNs: 0,
    listen: web.listen,
    connectNs: pid,
    connect: web.connect,
    proxyProtocol: false,
    exitWith: pid,
  });
  const firstPid = fw()!.pid;
  await once(reconciler, c.id);
  assert.equal(fw()!.pid, firstPid, 'a running forwarder with its spec is left alone');

  // Killed: the observer sees it (no reconcile before), the reconcile starts it again.
  const reports: string[] = [];
  const observer = createProxyDriftObserver({
    live,
    proxy,
    report: (_k, key, what) => reports.push(`${key}: ${what}`),
  });
  await observer.sample(new AbortController().signal);
  assert.deepEqual(reports, []);
  proxy.kill(c.id, 'web');
  await observer.sample(new AbortController().signal);
  assert.deepEqual(reports, [`${c.id}: proxy forwarder of web not running`]);
  await once(reconciler, c.id);
  assert.ok(fw() && fw()!.pid !== firstPid);
  assert.equal(lxc.calls.start, 1, 'never restarted');

  // Changed and a second one added (bind=container, unix, dac, priv drop, proxy protocol): live.
  let row = (await readContainerById(db, c.id))!;
  const sock = {
    type: 'proxy',
    bind: 'container',
    listen: 'unix:/run/h.sock',
    connect: 'tcp:127.0.0.1:9000',
    uid: '1000',
    gid: '1001',
    mode: '0660',
    'security.uid': '65534',
    'security.gid': '65534',
    proxy_protocol: 'true',
  };
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { web: { ...web, connect: 'tcp:127.0.0.1:81' }, sock },
  });
  await once(reconciler, c.id);
  assert.equal(fw()!.spec.connect, 'tcp:127.0.0.1:81');
  assert.deepEqual(proxy.forwarders.get(c.id)!.get('sock')!.spec, {
    containerId: c.id,
    device: 'sock',
    listenNs: pid,
    listen: sock.listen,
    connectNs: 0,
    connect: sock.connect,
    listenUid: 1000,
    listenGid: 1001,
    listenMode: '0660',
    dropUid: 65534,
    dropGid: 65534,
    proxyProtocol: true,
    exitWith: pid,
  });
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { sock },
  });
  await once(reconciler, c.id);
  assert.deepEqual([...proxy.forwarders.get(c.id)!.keys()], ['sock'], 'a removed proxy is stopped live');
  assert.equal(lxc.calls.start, 1);

  // The forwarder cannot start (address in use): the reconcile fails with its words.
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { sock, web },
  });
  proxy.refuse('web', 'error: listen tcp:127.0.0.1:8080: Address already in use');
  await assert.rejects(
    once(reconciler, c.id),
    (e: Error) =>
      /proxy "web": error: listen tcp:127\.0\.0\.1:8080: Address already in use/.test(e.message) && isTerminalError(e),
  );
  await once(reconciler, c.id);
  assert.ok(fw());

  // Stopped: its forwarders go.
  await bumpContainer(db, c.id, {
    power: 'stopped',
    powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 },
  });
  await once(reconciler, c.id);
  assert.equal(proxy.forwarders.get(c.id)?.size ?? 0, 0);
  assert.equal(live.get(c.id), undefined);
});

test('t17 nat proxies: DNAT rules to the static address of a managed nic, changed live, removed at stop and delete', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const network = createSimNetwork({ bridges: lxc.bridges });
  const proxy = createSimProxy();
  const reconciler = createContainerReconciler({ ...simContainerDeps({ db, stateDir, storage, lxc, network }), proxy });
  const once = createReconcileOnce(db);
  const netId = randomUUID();
  const [net] = await db
    .insert(networks)
    .values({ id: netId, name: 't17n', config: { 'ipv4.address': '10.57.1.1/24' } })
    .returning();
  await network.ensureNetwork({ name: 't17n', dir: networkDirOf(stateDir, 't17n') } as never);
  await recordMemberConverged(db, 'sim', 'network', netId, net!.generation);
  const eth0 = { type: 'nic', network: 't17n', 'ipv4.address': '10.57.1.10' };
  const nat = { type: 'proxy', nat: 'true', listen: 'tcp:127.0.0.1:8080-8081', connect: 'tcp:0.0.0.0:80' };
  const c = await insertContainer(
    db,
    'default',
    'n1',
    { ...base, devices: { eth0, nat } },
    { type: 'none' },
    'stopped',
  );
  await bumpContainer(db, c.id, start(1));
  await once(reconciler, c.id);
  assert.deepEqual(proxy.nat.get(c.id), [
    {
      protocol: 'tcp',
      family: 4,
      listenAddress: '127.0.0.1',
      listenPorts: [8080, 8081],
      connectAddress: '10.57.1.10',
      connectPorts: [80],
      bridge: 't17n',
    },
  ]);
  assert.equal(proxy.forwarders.get(c.id)?.size ?? 0, 0, 'no forwarder in nat mode');
  await once(reconciler, c.id);
  assert.equal(proxy.calls.applyNat, 1, 'unchanged rules are not applied again');

  let row = (await readContainerById(db, c.id))!;
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: { eth0, nat: { ...nat, listen: 'tcp:127.0.0.1:9090', connect: 'tcp:10.57.1.10:8000' } },
  });
  await once(reconciler, c.id);
  assert.deepEqual(proxy.nat.get(c.id)![0]!.listenPorts, [9090]);
  assert.deepEqual(proxy.nat.get(c.id)![0]!.connectPorts, [8000]);

  await bumpContainer(db, c.id, {
    power: 'stopped',
    powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 },
  });
  await once(reconciler, c.id);
  assert.equal(proxy.nat.has(c.id), false);
  await bumpContainer(db, c.id, start(3));
  await once(reconciler, c.id);
  assert.ok(proxy.nat.has(c.id));
  await markContainerDeleting(db, (await readContainerById(db, c.id))!);
  await once(reconciler, c.id);
  assert.equal(proxy.nat.has(c.id), false);
});

test('t17 without a proxy adapter a proxy device fails the start clearly', async () => {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const reconciler = createContainerReconciler(simContainerDeps({ db, stateDir, storage, lxc }));
  const c = await insertContainer(db, 'default', 'p0', { ...base, devices: { web } }, { type: 'none' }, 'stopped');
  await bumpContainer(db, c.id, start(1));
  await assert.rejects(
    createReconcileOnce(db)(reconciler, c.id),
    /proxy "web": proxy devices are not available on this host/,
  );
});

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
import { recordMemberConverged, recordMemberFailed } from '../../desired/member-status.ts';
import { readFacts, writeFacts } from '../../desired/reconcile-facts.ts';
import { networks } from '../../desired/schema/index.ts';
import { networkDirOf } from '../../host/layout.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { openSimHost, simContainerDeps } from '../../test-support/sim-container-deps.ts';
import { createSimLxc } from '../../test-support/sim-lxc.ts';
import { createSimNetwork } from '../../test-support/sim-network.ts';
import type { SimStorage } from '../../test-support/sim-storage.ts';
import { defaultHostName } from './device-specs.ts';
import { createContainerReconciler } from './reconcile.ts';

let stateDir: string;
let storage: SimStorage;
const temp = useTempDatabase(
  'svcd-container-nics-',
  async (db) => void ({ stateDir, storage } = await openSimHost(db, 'svcd-sim-nics-')),
);
after(() => rm(stateDir, { recursive: true, force: true }));

const base = { description: '', architecture: 'x86_64', ephemeral: false, profiles: ['default'], config: {} };

/** A simulated host with a managed network `name` on `cidr` (its row and its bridge), and a container reconciler on it. */
async function simHostWithNetwork(name: string, cidr: string) {
  const { db } = temp.database;
  const lxc = createSimLxc();
  const network = createSimNetwork({ bridges: lxc.bridges });
  const reconciler = createContainerReconciler(simContainerDeps({ db, stateDir, storage, lxc, network }));
  const once = createReconcileOnce(db);
  const netId = randomUUID();
  const [net] = await db
    .insert(networks)
    .values({ id: netId, name, config: { 'ipv4.address': cidr } })
    .returning();
  await network.ensureNetwork({ name, dir: networkDirOf(stateDir, name) } as never);
  return { db, lxc, network, reconciler, once, netId, net: net! };
}

test('nics on a managed network: wait for it, DHCP host entries, live attach, repair, detach, and removal with the container', async () => {
  const { db, lxc, network, reconciler, once, netId, net } = await simHostWithNetwork('n1', '10.55.1.1/24');

  const c = await insertContainer(
    db,
    'default',
    'web',
    { ...base, devices: { eth0: { type: 'nic', network: 'n1', 'ipv4.address': '10.55.1.10' } } },
    { type: 'none' },
    'stopped',
  );
  const mac0 = c.config['volatile.eth0.hwaddr']!;
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  // The network has not converged yet: this container waits (retryable), its entry already written.
  await assert.rejects(
    once(reconciler, c.id),
    (e: Error) => /network "n1" is not ready: it is not set up yet/.test(e.message) && !('terminal' in e && e.terminal),
  );
  assert.equal(lxc.calls.start, undefined);
  await recordMemberConverged(db, 'sim', 'network', netId, net!.generation);
  await once(reconciler, c.id);
  const sim = lxc.containers.get(c.id)!;
  assert.equal(sim.state, 'RUNNING');
  assert.deepEqual(sim.nics.get('eth0'), { hwaddr: mac0, hostName: defaultHostName(c.id, 'eth0') });
  assert.equal(lxc.veths.get(defaultHostName(c.id, 'eth0'))!.master, 'n1');
  assert.deepEqual(Object.fromEntries(network.dhcpHosts.get('n1')!), {
    [`${c.id}.eth0`]: { hwaddr: mac0, hostname: 'web', ipv4: '10.55.1.10' },
  });

  // A second nic, live: attached without a restart, with its limits and MAC filter.
  let row = (await readContainerById(db, c.id))!;
  row = await bumpContainerAt(db, c.id, row.generation, {
    profiles: row.profiles,
    config: row.config,
    devices: {
      ...row.devices,
      eth1: { type: 'nic', network: 'n1', 'limits.ingress': '10Mbit', 'security.mac_filtering': 'true' },
    },
  });
  const mac1 = row.config['volatile.eth1.hwaddr']!;
  const host1 = defaultHostName(c.id, 'eth1');
  await once(reconciler, c.id);
  assert.equal(lxc.calls.start, 1, 'not restarted');
  assert.deepEqual(sim.nics.get('eth1'), { hwaddr: mac1, hostName: host1 });
  assert.deepEqual(lxc.nicLimits.get(host1), { ingressBits: 10_000_000, egressBits: undefined });
  assert.equal(lxc.nicFilters.get(host1)?.hwaddr, mac1);
  assert.equal(network.dhcpHosts.get('n1')!.get(`${c.id}.eth1`)?.hwaddr, mac1);
  await once(reconciler, c.id);
  assert.equal(lxc.calls.attachNic, 1, 'a converged nic is left alone');

  // Its veth deleted behind svcd's back: attached again, limits again; a bridge made anew: put back on it.
  await lxc.detachNic(host1);
  await once(reconciler, c.id);
  assert.equal(lxc.calls.attachNic, 2);
  assert.ok(sim.nics.has('eth1') && lxc.nicLimits.has(host1));
  lxc.veths.get(defaultHostName(c.id, 'eth0'))!.master = '';
  await once(reconciler, c.id);
  assert.equal(lxc.calls.rejoinBridge, 1);
  assert.equal(lxc.veths.get(defaultHostName(c.id, 'eth0'))!.master, 'n1');

  // Removed: detached live, its limits, filter and DHCP entry go.
  row = (await readContainerById(db, c.id))!;
  const { eth1: _gone, ...rest } = row.devices;
  row = await bumpContainerAt(db, c.id, row.generation, { profiles: row.profiles, config: row.config, devices: rest });
  await once(reconciler, c.id);
  assert.equal(lxc.calls.start, 1);
  assert.equal(sim.nics.has('eth1'), false);
  assert.equal(lxc.veths.has(host1), false);
  assert.equal(lxc.nicLimits.has(host1) || lxc.nicFilters.has(host1), false);
  assert.deepEqual([...network.dhcpHosts.get('n1')!.keys()], [`${c.id}.eth0`]);

  // A network that fails blocks the start of its containers with its error.
  await bumpContainer(db, c.id, {
    power: 'stopped',
    powerRequest: { action: 'stop', force: false, timeout: -1, seq: 2 },
  });
  await once(reconciler, c.id);
  await recordMemberFailed(db, 'sim', 'network', netId, 'subnet 10.55.1.0/24 is taken', false);
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 3 },
  });
  await assert.rejects(once(reconciler, c.id), /network "n1" is not ready: subnet 10\.55\.1\.0\/24 is taken/);
  await recordMemberConverged(db, 'sim', 'network', netId, net!.generation);
  await once(reconciler, c.id);
  assert.equal(lxc.containers.get(c.id)!.state, 'RUNNING');

  // Deleted: its DHCP host entries go.
  await markContainerDeleting(db, (await readContainerById(db, c.id))!);
  await once(reconciler, c.id);
  assert.equal(network.dhcpHosts.get('n1')!.size, 0);
});

test('a running container whose nics have LXC-named veths (an svcd before stable names) is adopted: renamed, not attached twice; a MAC that differs is replaced', async () => {
  const { db, lxc, reconciler, once, netId, net } = await simHostWithNetwork('n2', '10.55.2.1/24');
  await recordMemberConverged(db, 'sim', 'network', netId, net.generation);
  const c = await insertContainer(
    db,
    'default',
    'old',
    { ...base, devices: { eth0: { type: 'nic', network: 'n2' }, eth1: { type: 'nic', network: 'n2' } } },
    { type: 'none' },
    'stopped',
  );
  await bumpContainer(db, c.id, {
    power: 'running',
    powerRequest: { action: 'start', force: false, timeout: -1, seq: 1 },
  });
  await once(reconciler, c.id);
  const sim = lxc.containers.get(c.id)!;
  // As an svcd before stable names left it: LXC's veth names, eth1 with a MAC of LXC's, nothing recorded.
  const rename = (inside: string, to: string, hwaddr?: string) => {
    const n = sim.nics.get(inside)!;
    lxc.veths.set(to, lxc.veths.get(n.hostName)!);
    lxc.veths.delete(n.hostName);
    Object.assign(n, { hostName: to }, hwaddr ? { hwaddr } : {});
  };
  rename('eth0', 'vethA1b2C3');
  rename('eth1', 'vethD4e5F6', '00:16:3e:aa:bb:cc');
  const facts = await readFacts(db, 'container', c.id);
  await writeFacts(db, 'container', c.id, { ...facts, live: { ...(facts.live as object), nics: undefined } });
  const attached = lxc.calls.attachNic ?? 0;

  await once(reconciler, c.id);
  const [h0, h1] = [defaultHostName(c.id, 'eth0'), defaultHostName(c.id, 'eth1')];
  assert.equal(lxc.calls.start, 1, 'not restarted');
  assert.equal(lxc.calls.adoptNic, 2);
  assert.deepEqual([...lxc.veths.keys()].sort(), [h0, h1].sort(), 'the LXC names are gone, the stable ones are there');
  assert.equal(sim.nics.get('eth0')!.hostName, h0);
  assert.equal(lxc.calls.attachNic ?? 0, attached + 1, 'eth0 adopted as it is; eth1 (another MAC) attached anew');
  assert.equal(sim.nics.get('eth1')!.hwaddr, (await readContainerById(db, c.id))!.config['volatile.eth1.hwaddr']);
  await once(reconciler, c.id);
  assert.equal(lxc.calls.attachNic ?? 0, attached + 1, 'then left alone');
});

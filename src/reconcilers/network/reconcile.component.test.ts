import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTempDatabase } from '../../db/temp-database.ts';
import { insertNetwork, markNetworkDeleting, readNetworkById, renameNetwork } from '../../desired/networks.ts';
import { ensureDefaultProject } from '../../desired/projects.ts';
import { createNetworkObserver } from '../../observers/network-observer.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { createSimNetwork } from '../../test-support/sim-network.ts';
import { readMemberFacts } from '../../desired/member-status.ts';
import { createNetworkReconciler } from './reconcile.ts';

const temp = useTempDatabase('svcd-net-rec-', ensureDefaultProject);
const STATE = '/state';

function setup() {
  const { db } = temp.database;
  const network = createSimNetwork();
  const repaired: string[] = [];
  const reconciler = createNetworkReconciler({
    db,
    stateDir: STATE,
    node: 'n1',
    network,
    onRepaired: (n) => void repaired.push(n),
  });
  return { db, network, reconciler, repaired, once: createReconcileOnce(db) };
}
const make = (db: Parameters<typeof insertNetwork>[0], name: string, config: Record<string, string> = {}) =>
  insertNetwork(db, {
    name,
    type: 'bridge',
    description: '',
    config: { 'ipv4.address': '10.77.1.1/24', 'ipv6.address': 'none', ...config },
  });

test('a network converges to its spec, the firewall holds every live network, a second reconcile repairs nothing', async () => {
  const { db, network, reconciler, repaired, once } = setup();
  const a = await make(db, 'rc-a');
  const b = await make(db, 'rc-b', { 'ipv4.address': '10.77.2.1/24', 'ipv4.nat': 'true' });
  assert.deepEqual(await once(reconciler, a.id), { observedGeneration: a.generation });
  const spec = network.networks.get('rc-a')!.spec;
  assert.deepEqual(
    [spec.dir, spec.ipv4?.subnet, spec.ipv4?.nat, spec.ipv6],
    ['/state/networks/rc-a', '10.77.1.0/24', false, undefined],
  );
  assert.ok(
    network.firewall.includes('rc-a') && network.firewall.includes('rc-b'),
    'the table is rendered from every live network',
  );
  assert.deepEqual(await readMemberFacts(db, 'n1', 'network', a.id), { bridge: 'rc-a' });
  await once(reconciler, b.id);
  assert.equal(network.networks.get('rc-b')!.spec.ipv4?.nat, true);
  await once(reconciler, a.id);
  assert.deepEqual(repaired, [], 'nothing was broken');
});

test('a bridge deleted behind svcd is made again and its containers are woken', async () => {
  const { db, network, reconciler, repaired, once } = setup();
  const n = await make(db, 'rc-heal', { 'ipv4.address': '10.77.3.1/24' });
  await once(reconciler, n.id);
  network.deleteBridge('rc-heal');
  const reports: string[] = [];
  const observer = createNetworkObserver({
    db,
    stateDir: STATE,
    network,
    report: (_k, key, what) => void reports.push(`${key} ${what}`),
    repeatMs: 60_000,
  });
  await observer.sample(new AbortController().signal);
  await observer.sample(new AbortController().signal);
  const mine = reports.filter((r) => r.startsWith(n.id));
  assert.equal(mine.length, 1, 'reported once while broken (not every sample)');
  assert.match(mine[0]!, /bridge rc-heal is missing/);
  await once(reconciler, n.id);
  assert.ok(network.bridges.has('rc-heal'));
  assert.deepEqual(repaired, ['rc-heal']);
  reports.length = 0;
  await observer.sample(new AbortController().signal);
  assert.deepEqual(
    reports.filter((r) => r.startsWith(n.id)),
    [],
    'healthy again: nothing reported',
  );
});

test('a failed host step fails the reconcile (the network shows why), the next one converges', async () => {
  const { db, network, reconciler, once } = setup();
  const n = await make(db, 'rc-fail', { 'ipv4.address': '10.77.4.1/24' });
  network.failOnce('ensureNetwork', {
    error: new Error('subnet 10.77.4.0/24 is already used by host interface "eth9"'),
  });
  await assert.rejects(once(reconciler, n.id), /already used by host interface "eth9"/);
  assert.equal(network.bridges.has('rc-fail'), false);
  assert.deepEqual(await once(reconciler, n.id), { observedGeneration: n.generation });
});

test('a rename removes the old bridge; a delete removes the network, its firewall rules and its row', async () => {
  const { db, network, reconciler, once } = setup();
  const n = await make(db, 'rc-old', { 'ipv4.address': '10.77.5.1/24' });
  await once(reconciler, n.id);
  const renamed = await renameNetwork(db, n.id, 'rc-new', { interfaces: async () => [] });
  await once(reconciler, n.id);
  assert.equal(network.bridges.has('rc-old'), false);
  assert.ok(network.bridges.has('rc-new'));
  assert.deepEqual(await readMemberFacts(db, 'n1', 'network', n.id), { bridge: 'rc-new' });
  const gone = await markNetworkDeleting(db, renamed.id);
  assert.deepEqual(await once(reconciler, n.id), { observedGeneration: gone.generation, gone: true });
  assert.equal(network.bridges.has('rc-new'), false);
  assert.ok(!network.firewall.includes('rc-new'));
  assert.equal(await readNetworkById(db, n.id), undefined);
  assert.deepEqual(await once(reconciler, n.id), {}, 'a gone network is nothing to do');
});

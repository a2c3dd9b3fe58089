import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { admitMember, deleteMember } from '../../cluster/members.ts';
import { useTempDatabase } from '../../db/temp-database.ts';
import { readMemberFacts, readMemberStatus } from '../../desired/member-status.ts';
import { insertNetwork, markNetworkDeleting, readNetworkById, renameNetwork } from '../../desired/networks.ts';
import { ensureDefaultProject } from '../../desired/projects.ts';
import { insertPool, markPoolDeleting, readPool } from '../../desired/storage-pools.ts';
import { createReconcileOnce } from '../../test-support/reconcile-once.ts';
import { createSimNetwork } from '../../test-support/sim-network.ts';
import { createSimStorage } from '../../test-support/sim-storage.ts';
import { createPoolReconciler } from '../storage-pool/reconcile.ts';
import { createNetworkReconciler } from './reconcile.ts';

/**
 * Two members on one database, each with its own (simulated) host: every member makes a network or a pool on
 * its own host and keeps its own status row, so one member's convergence, facts or removal never stand for
 * another's. A deletion's row goes with the last member's part.
 */
const temp = useTempDatabase('svcd-members-rec-', ensureDefaultProject);
let root: string;
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-sim-members-'));
});
after(() => rm(root, { recursive: true, force: true }));

function member(node: string) {
  const { db } = temp.database;
  const network = createSimNetwork();
  const storage = createSimStorage({ root: path.join(root, node) });
  return {
    node,
    network,
    storage,
    net: createNetworkReconciler({ db, stateDir: `/state-${node}`, node, network }),
    pool: createPoolReconciler({ db, stateDir: path.join(root, node), node, storage }),
    once: createReconcileOnce(db, node),
  };
}

const makeNet = (name: string) =>
  insertNetwork(temp.database.db, {
    name,
    type: 'bridge',
    description: '',
    config: { 'ipv4.address': 'none', 'ipv6.address': 'none' },
  });

test('a network deleted through one member goes from every member that made it; its row with the last one', async () => {
  const { db } = temp.database;
  const [a, b, c] = [member('a'), member('b'), member('c')];
  const n = await makeNet('mb-del');
  await a.once(a.net, n.id);
  await b.once(b.net, n.id);
  assert.ok(a.network.bridges.has('mb-del') && b.network.bridges.has('mb-del'));
  assert.deepEqual(
    [
      (await readMemberStatus(db, 'a', 'network', n.id))?.observedGeneration,
      await readMemberStatus(db, 'c', 'network', n.id),
    ],
    [n.generation, undefined],
    'each member its own row; none for a member that has not made it',
  );

  const gone = await markNetworkDeleting(db, n.id);
  assert.deepEqual(await a.once(a.net, n.id), { observedGeneration: gone.generation, gone: true });
  assert.equal(a.network.bridges.has('mb-del'), false);
  assert.ok(b.network.bridges.has('mb-del'), "b's part is b's to remove");
  assert.ok((await readNetworkById(db, n.id))?.deletingAt, 'the row waits for b');
  assert.equal(await readMemberStatus(db, 'a', 'network', n.id), undefined, "a's row went with its part");

  // c never made it: its removal touches nothing of b's, and the row still waits for b.
  await c.once(c.net, n.id);
  assert.ok(await readNetworkById(db, n.id));

  await b.once(b.net, n.id);
  assert.equal(b.network.bridges.has('mb-del'), false);
  assert.equal(await readNetworkById(db, n.id), undefined, 'gone with the last member that had it');
});

test('a member removed while a deletion waits for its part: the next reconcile of the deletion finishes it', async () => {
  const { db } = temp.database;
  const [a, b] = [member('a'), member('b')];
  await admitMember(db, { name: 'b', address: '127.0.0.1:1', roles: [] });
  const n = await makeNet('mb-gone');
  await a.once(a.net, n.id);
  await b.once(b.net, n.id);
  // b dies; the network is deleted through a.
  await markNetworkDeleting(db, n.id);
  await a.once(a.net, n.id);
  assert.ok(await readNetworkById(db, n.id), "the row waits for b's part");
  await a.once(a.net, n.id);
  assert.ok(await readNetworkById(db, n.id), 'still, however often a looks');
  // b removed with force: its status rows go with it, and a's next look (requeued) removes the row.
  await deleteMember(db, 'b');
  assert.equal(await readMemberStatus(db, 'b', 'network', n.id), undefined);
  await a.once(a.net, n.id);
  assert.equal(await readNetworkById(db, n.id), undefined);
  assert.equal((await makeNet('mb-gone')).name, 'mb-gone', 'the name is free again');
});

test('a member that first looks at a network being deleted makes nothing of it', async () => {
  const { db } = temp.database;
  const [a, b] = [member('a'), member('b')];
  const n = await makeNet('mb-late');
  await a.once(a.net, n.id);
  await markNetworkDeleting(db, n.id);
  await b.once(b.net, n.id);
  assert.equal(b.network.bridges.has('mb-late'), false);
  assert.ok(await readNetworkById(db, n.id), "still a's to remove");
  await a.once(a.net, n.id);
  assert.equal(await readNetworkById(db, n.id), undefined);
});

test("a rename: each member removes its own old bridge (one member's facts never stand for another's)", async () => {
  const { db } = temp.database;
  const [a, b] = [member('a'), member('b')];
  const n = await makeNet('mb-old');
  await a.once(a.net, n.id);
  await b.once(b.net, n.id);
  await renameNetwork(db, n.id, 'mb-new', { interfaces: async () => [] });
  await a.once(a.net, n.id);
  assert.deepEqual(await readMemberFacts(db, 'b', 'network', n.id), { bridge: 'mb-old' }, "b's facts are b's");
  await b.once(b.net, n.id);
  for (const m of [a, b]) {
    assert.equal(m.network.bridges.has('mb-old'), false, `${m.node} removed its old bridge`);
    assert.ok(m.network.bridges.has('mb-new'));
  }
});

test('a pool: each member its own part and facts; deleted, its row goes with the last part', async () => {
  const { db } = temp.database;
  const [a, b] = [member('a'), member('b')];
  await insertPool(db, { name: 'mb-pool', driver: 'dir' }, {});
  await a.once(a.pool, 'mb-pool');
  await b.once(b.pool, 'mb-pool');
  assert.deepEqual(await readMemberFacts(db, 'b', 'storage-pool', 'mb-pool'), { mountOptions: '' });
  await markPoolDeleting(db, 'mb-pool');
  await b.once(b.pool, 'mb-pool');
  assert.equal((await readPool(db, 'mb-pool')).name, 'mb-pool', "the row waits for a's part");
  await a.once(a.pool, 'mb-pool');
  await assert.rejects(readPool(db, 'mb-pool'), /not found/);
  for (const m of [a, b]) assert.deepEqual([...m.storage.pools], [], `${m.node}'s part is gone`);
});

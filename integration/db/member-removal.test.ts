import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readMemberStatus } from '../../src/desired/member-status.ts';
import { insertNetwork, markNetworkDeleting, readNetworkById } from '../../src/desired/networks.ts';
import { ensureDefaultProject } from '../../src/desired/projects.ts';
import { createNetworkReconciler } from '../../src/reconcilers/network/reconcile.ts';
import { createReconcileOnce } from '../../src/test-support/reconcile-once.ts';
import { createSimNetwork } from '../../src/test-support/sim-network.ts';
import { openPgliteTarget, openPostgresTarget, type OpenTarget, type StoreTarget } from './targets.ts';

/**
 * Members removing their parts of one network at the same moment: whatever the interleaving, the row goes
 * exactly when the last part went (the lock of the row, then the condition read after it: member-status.ts).
 */
function defineSuite(name: string, open: OpenTarget): void {
  describe(name, () => {
    let t: StoreTarget | undefined;
    before(async () => {
      t = await open();
      await ensureDefaultProject(t.database.db);
    });
    after(async () => t?.cleanup());

    test('three members remove their parts at once, 8 times: the row is gone every time, no member row left', async () => {
      const db = t!.database.db;
      const members = ['a', 'b', 'c'].map((node) => {
        const network = createSimNetwork();
        return {
          node,
          network,
          reconciler: createNetworkReconciler({ db, stateDir: `/state-${node}`, node, network }),
          once: createReconcileOnce(db, node),
        };
      });
      for (let round = 0; round < 8; round++) {
        const n = await insertNetwork(db, {
          name: `race${round}`,
          type: 'bridge',
          description: '',
          config: { 'ipv4.address': 'none', 'ipv6.address': 'none' },
        });
        for (const m of members) await m.once(m.reconciler, n.id);
        await markNetworkDeleting(db, n.id);
        await Promise.all(members.map((m) => m.once(m.reconciler, n.id)));
        assert.equal(await readNetworkById(db, n.id), undefined, `round ${round}: the row went with the last part`);
        for (const m of members) {
          assert.equal(m.network.bridges.has(n.name), false);
          assert.equal(await readMemberStatus(db, m.node, 'network', n.id), undefined);
        }
      }
    });
  });
}

defineSuite('removals by several members on PGlite', openPgliteTarget);
defineSuite('removals by several members on PostgreSQL', openPostgresTarget);

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import type { DbOrTx } from '../../src/db/types.ts';
import { operations, reconcileStatus, type OperationRow } from '../../src/desired/schema/index.ts';
import {
  expireOperations,
  failOrphanedOperations,
  listActiveOperations,
  listFinishedOperations,
  pruneOperations,
} from '../../src/operations/operation-store.ts';
import { eventually } from '../support/http.ts';
import { makeOps, mustReadOperation, operationRow as row, seed, sorted, type SuiteContext } from './helpers.ts';

/** Rows of the given operations (whatever their state), to check what a store function changed. */
async function readOperationsByIds(db: DbOrTx, ids: string[]): Promise<OperationRow[]> {
  if (ids.length === 0) return [];
  return db.select().from(operations).where(inArray(operations.id, ids));
}

const TIMEOUT = 'timed out waiting for the host to converge (svcd keeps trying in the background)';
/** Each test seeds rows in its own time range so that cutoffs and deadlines never reach another test's rows. */
const at = (iso: string, plusMs = 0) => new Date(Date.parse(iso) + plusMs);

export function defineOperationStoreTests(ctx: SuiteContext): void {
  test('listActiveOperations returns only non-final operations, newest first, filtered by project', async () => {
    const db = ctx.db();
    const t = (s: number) => at('2020-01-01T00:00:00Z', s * 1000);
    const P = 'ops-list';
    const running = row({ project: P, statusCode: 103, createdAt: t(1) });
    const pending = row({ project: P, statusCode: 105, createdAt: t(2) });
    const cancelling = row({ project: P, statusCode: 104, createdAt: t(3) });
    const final = [200, 400, 401].map((statusCode, i) => row({ project: P, statusCode, createdAt: t(10 + i) }));
    const elsewhere = row({ project: 'ops-list-other', statusCode: 103, createdAt: t(4) });
    await seed(db, [running, pending, cancelling, ...final, elsewhere]);

    assert.deepEqual(
      (await listActiveOperations(db, P)).map((r) => r.id),
      [cancelling.id, pending.id, running.id],
    );
    assert.deepEqual(
      (await listActiveOperations(db, 'ops-list-other')).map((r) => r.id),
      [elsewhere.id],
    );
    assert.deepEqual(await listActiveOperations(db, 'ops-list-nothing'), []);
    const all = (await listActiveOperations(db)).map((r) => r.id);
    for (const r of [running, pending, cancelling, elsewhere]) assert.ok(all.includes(r.id), `${r.statusCode} listed`);
    for (const r of final) assert.ok(!all.includes(r.id), `${r.statusCode} not listed`);
  });

  test('failOrphanedOperations fails only active, target-less operations of the given node', async () => {
    const db = ctx.db();
    const now = at('2021-01-01T00:00:00Z', 60_000);
    const createdAt = at('2021-01-01T00:00:00Z');
    const N = 'orphan-node';
    const orphan = row({ node: N, createdAt, mayCancel: true });
    const orphanPending = row({ node: N, statusCode: 105, createdAt });
    const withTarget = row({ node: N, targetKind: 'profile', targetKey: 'default/o', targetGeneration: 2, createdAt });
    const otherNode = row({ node: 'orphan-other', createdAt });
    const finished = row({ node: N, statusCode: 200, createdAt });
    await seed(db, [orphan, orphanPending, withTarget, otherNode, finished]);

    const failed = await failOrphanedOperations(db, N, 'svcd stopped', now);
    assert.deepEqual(sorted(failed.map((r) => r.id)), sorted([orphan.id, orphanPending.id]));
    for (const id of [orphan.id, orphanPending.id]) {
      const r = await mustReadOperation(db, id);
      assert.deepEqual(
        [r.statusCode, r.err, r.mayCancel, r.updatedAt.getTime()],
        [400, 'svcd stopped', false, now.getTime()],
      );
    }
    for (const [id, code] of [
      [withTarget.id, 103],
      [otherNode.id, 103],
      [finished.id, 200],
    ] as const) {
      const r = await mustReadOperation(db, id);
      assert.deepEqual([r.statusCode, r.err, r.updatedAt.getTime()], [code, '', createdAt.getTime()]);
    }

    // The service's recover() is the same query for its own node.
    const mine = row({ node: 'recover-node', createdAt });
    await seed(db, [
      mine,
      row({ node: 'recover-node', targetKind: 'profile', targetKey: 'default/r', targetGeneration: 1, createdAt }),
    ]);
    const { ops, events } = makeOps(db, 'recover-node');
    assert.equal(await ops.recover(), 1);
    assert.equal((await mustReadOperation(db, mine.id)).err, 'svcd stopped while this operation was running');
    assert.deepEqual(
      events.map((e) => e.metadata.id),
      [mine.id],
    );
  });

  test('expireOperations fails past-deadline operations, naming the last reconcile error when there is one', async () => {
    const db = ctx.db();
    const now = at('2022-01-01T01:00:00Z');
    const createdAt = at('2022-01-01T00:00:00Z');
    const past = new Date(now.getTime() - 1000);
    const target = (key: string) => ({ targetKind: 'profile', targetKey: key, targetGeneration: 2 });
    await db.insert(reconcileStatus).values([
      { kind: 'profile', key: 'default/exp-err', observedGeneration: 1, lastError: 'disk full' },
      { kind: 'profile', key: 'default/exp-clean', observedGeneration: 1, lastError: '' },
      { kind: 'instance', key: 'default/exp-none', observedGeneration: 1, lastError: 'wrong kind' },
    ]);
    const withError = row({ ...target('default/exp-err'), deadlineAt: past, createdAt, mayCancel: true });
    const cleanStatus = row({ ...target('default/exp-clean'), deadlineAt: past, createdAt });
    const noStatus = row({ ...target('default/exp-none'), deadlineAt: past, createdAt });
    const noTarget = row({ deadlineAt: past, createdAt });
    const notYet = row({ ...target('default/exp-err'), deadlineAt: new Date(now.getTime() + 1000), createdAt });
    const atDeadline = row({ ...target('default/exp-err'), deadlineAt: now, createdAt });
    const noDeadline = row({ ...target('default/exp-err'), deadlineAt: null, createdAt });
    const finished = row({ ...target('default/exp-err'), deadlineAt: past, statusCode: 200, createdAt });
    await seed(db, [withError, cleanStatus, noStatus, noTarget, notYet, atDeadline, noDeadline, finished]);

    const expired = await expireOperations(db, now);
    assert.deepEqual(
      sorted(expired.map((r) => r.id)),
      sorted([withError.id, cleanStatus.id, noStatus.id, noTarget.id]),
    );
    const expected: [string, string][] = [
      [withError.id, `${TIMEOUT}: disk full`],
      [cleanStatus.id, TIMEOUT],
      [noStatus.id, TIMEOUT],
      [noTarget.id, TIMEOUT],
    ];
    for (const [id, err] of expected) {
      const r = await mustReadOperation(db, id);
      assert.deepEqual([r.statusCode, r.err, r.mayCancel, r.updatedAt.getTime()], [400, err, false, now.getTime()]);
    }
    for (const r of await readOperationsByIds(db, [notYet.id, atDeadline.id, noDeadline.id, finished.id]))
      assert.deepEqual([r.statusCode, r.err], [r.id === finished.id ? 200 : 103, '']);
  });

  test('pruneOperations deletes only finished operations last updated before the cutoff', async () => {
    const db = ctx.db();
    const cutoff = at('2010-01-01T00:00:00Z');
    const old = new Date(cutoff.getTime() - 1000);
    const createdAt = at('2009-01-01T00:00:00Z');
    const gone = [200, 400, 401].map((statusCode) => row({ statusCode, createdAt, updatedAt: old }));
    const recent = row({ statusCode: 200, createdAt, updatedAt: new Date(cutoff.getTime() + 1000) });
    const atCutoff = row({ statusCode: 400, createdAt, updatedAt: cutoff });
    const activeOld = row({ statusCode: 103, createdAt, updatedAt: old });
    const pendingOld = row({ statusCode: 105, createdAt, updatedAt: old });
    await seed(db, [...gone, recent, atCutoff, activeOld, pendingOld]);

    assert.equal(await pruneOperations(db, cutoff), 3);
    assert.deepEqual(
      await readOperationsByIds(
        db,
        gone.map((r) => r.id),
      ),
      [],
    );
    const kept = await readOperationsByIds(db, [recent.id, atCutoff.id, activeOld.id, pendingOld.id]);
    assert.equal(kept.length, 4);
    assert.equal(await pruneOperations(db, cutoff), 0, 'a second prune finds nothing');
    assert.equal((await db.select().from(operations).where(eq(operations.id, activeOld.id))).length, 1);
  });

  test('listFinishedOperations: finished ones of the project, the last to end first, by resource if asked', async () => {
    const db = ctx.db();
    const t = (s: number) => at('2022-01-01T00:00:00Z', s * 1000);
    const P = 'ops-finished';
    const of = (name: string) => ({ containers: [`/1.0/containers/${name}?project=${P}`] });
    const failed = row({
      project: P,
      statusCode: 400,
      err: 'disk full',
      resources: of('c1'),
      createdAt: t(1),
      updatedAt: t(9),
    });
    const done = row({ project: P, statusCode: 200, resources: of('c2'), createdAt: t(2), updatedAt: t(5) });
    const cancelled = row({ project: P, statusCode: 401, resources: of('c1'), createdAt: t(3), updatedAt: t(7) });
    const running = row({ project: P, statusCode: 103, resources: of('c1'), createdAt: t(4) });
    const elsewhere = row({ project: 'ops-finished-other', statusCode: 200, createdAt: t(5) });
    await seed(db, [failed, done, cancelled, running, elsewhere]);

    const ids = (rows: OperationRow[]) => rows.map((r) => r.id);
    assert.deepEqual(ids(await listFinishedOperations(db, P, { limit: 10 })), [failed.id, cancelled.id, done.id]);
    assert.deepEqual(ids(await listFinishedOperations(db, P, { limit: 2 })), [failed.id, cancelled.id]);
    const c1 = { type: 'containers', urls: [`/1.0/containers/c1?project=${P}`, '/1.0/containers/c1'] };
    const mine = await listFinishedOperations(db, P, { limit: 10, resource: c1 });
    assert.deepEqual(ids(mine), [failed.id, cancelled.id]);
    assert.equal(mine[0]!.err, 'disk full');
    const none = { type: 'containers', urls: ['/1.0/containers/c1'] };
    assert.deepEqual(await listFinishedOperations(db, P, { limit: 10, resource: none }), []);
  });

  test('pruneOperations with a count keeps the last finished operations of that member only', async () => {
    const db = ctx.db();
    const t = (s: number) => at('2023-01-01T00:00:00Z', s * 1000);
    const N = 'prune-count-node';
    const finished = [1, 2, 3, 4, 5].map((s) => row({ node: N, statusCode: 200, createdAt: t(0), updatedAt: t(s) }));
    const active = row({ node: N, statusCode: 103, createdAt: t(0) });
    const otherNode = [1, 2, 3, 4].map((s) =>
      row({ node: `${N}-other`, statusCode: 400, createdAt: t(0), updatedAt: t(s) }),
    );
    await seed(db, [...finished, active, ...otherNode]);

    assert.equal(await pruneOperations(db, at('2000-01-01T00:00:00Z'), { node: N, count: 3 }), 2);
    const left = await readOperationsByIds(
      db,
      [...finished, active, ...otherNode].map((r) => r.id),
    );
    assert.deepEqual(
      sorted(left.map((r) => r.id)),
      sorted([...finished.slice(2), active, ...otherNode].map((r) => r.id)),
      'the two oldest of the member are gone; its running one and the other member stay',
    );
  });

  test('history: a failed task with its error, before and after its end is written, by resource', async () => {
    const db = ctx.db();
    const P = 'ops-history';
    const url = `/1.0/containers/h1?project=${P}`;
    const { ops } = makeOps(db, 'history-node');
    const spec = (description: string, name: string) => ({
      class: 'task' as const,
      description,
      project: P,
      resources: { containers: [`/1.0/containers/${name}?project=${P}`] },
    });
    const failed = await ops.startTask(spec('Starting h1', 'h1'), async () => {
      throw new Error('no rootfs');
    });
    const other = await ops.startTask(spec('Starting h2', 'h2'), async () => {});
    const mine = { type: 'containers', urls: [url] };
    const read = async (o: typeof ops) => {
      const all = await o.history(P, { limit: 10, resource: mine });
      return all.map((r) => [r.id, r.statusCode, r.err]);
    };
    await eventually(async () => (await read(ops))[0]?.[1] === 400, 'the task failed');
    assert.deepEqual(await read(ops), [[failed.id, 400, 'no rootfs']], 'ended here, from memory');
    assert.deepEqual(sorted((await ops.history(P, { limit: 10 })).map((r) => r.id)), sorted([other.id, failed.id]));
    await ops.stop();
    const fresh = makeOps(db, 'history-node').ops;
    assert.deepEqual(await read(fresh), [[failed.id, 400, 'no rootfs']], 'written: from the table');
  });
}

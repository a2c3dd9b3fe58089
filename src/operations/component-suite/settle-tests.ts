/** The operations suite's desired writes: settled by the reconcile of their generation, or failed (define-operations-suite.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { profiles } from '../../desired/schema/index.ts';
import { call, openSocket } from '../../test-support/agent-harness.ts';
import { until, type SuiteContext } from './suite-support.ts';

export function defineSettleTests(ctx: SuiteContext): void {
  test('a desired write settles by generation: the operation ends when the reconciler converged it', async () => {
    const agent = ctx.agent();
    const applied = ctx.widgets.applied;
    const desired = ctx.widgets.desired;
    const key = 'default/w1';
    const op = await agent.database.db.transaction(async (tx) => {
      // Any desired row works for the pattern: bump a generation and record the operation in one transaction.
      const [row] = await tx
        .update(profiles)
        .set({ generation: sql`${profiles.generation} + 1` })
        .where(sql`${profiles.name} = 'default'`)
        .returning();
      desired.set(key, row!.generation);
      return agent.ops.insert(tx, {
        class: 'task',
        description: 'Converging w1',
        project: 'default',
        target: { kind: 'widget', key, generation: row!.generation },
      });
    });
    agent.ops.announce(op);
    agent.reconcile.enqueue('widget', key, 'desired write');
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 200);
    assert.equal(applied.get(key), desired.get(key));
    // A creation announced behind its end (the settling won the race to the database) changes nothing.
    agent.ops.announce(op);
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}`)).json.metadata.status_code, 200);
    assert.equal((await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`)).json.metadata.status_code, 200);
  });

  test('a terminal reconcile error fails the operation with the reconciler text', async () => {
    const agent = ctx.agent();
    const behaviour = ctx.widgets.behaviour;
    const desired = ctx.widgets.desired;
    const key = 'default/w2';
    behaviour.set(key, 'terminal');
    desired.set(key, 1);
    const op = await agent.ops.insert(agent.database.db, {
      class: 'task',
      description: 'w2',
      project: 'default',
      target: { kind: 'widget', key, generation: 1 },
    });
    agent.reconcile.enqueue('widget', key, 'desired write');
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 400);
    assert.equal(done.json.metadata.err, 'widget default/w2 cannot be built: bad shape');
  });

  test('transient errors retry; past its deadline the operation fails naming the last error, and converges later', async () => {
    const agent = ctx.agent();
    const behaviour = ctx.widgets.behaviour;
    const applied = ctx.widgets.applied;
    const desired = ctx.widgets.desired;
    const key = 'default/w3';
    behaviour.set(key, 'transient');
    desired.set(key, 1);
    const op = await agent.ops.insert(agent.database.db, {
      class: 'task',
      description: 'w3',
      project: 'default',
      target: { kind: 'widget', key, generation: 1 },
      deadlineMs: 400,
    });
    agent.reconcile.enqueue('widget', key, 'desired write');
    const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
    assert.equal(done.json.metadata.status_code, 400);
    assert.match(done.json.metadata.err, /timed out waiting for the host to converge.*widget default\/w3: host busy/);
    behaviour.set(key, 'ok');
    await until(() => applied.get(key) === 1, 'the retry to converge w3', 10_000);
  });

  test('a client that stops answering pings is dropped from the events stream', async () => {
    const agent = ctx.agent();
    const _events = ctx.events();
    const eventsWs = ctx.eventsWs();
    const dead = await openSocket(agent, '/1.0/events', { autoPong: false });
    const closed = new Promise<void>((r) => dead.once('close', () => r()));
    const t0 = Date.now();
    await closed;
    assert.ok(Date.now() - t0 < 2_000, 'dropped within a few ping intervals');
    // A live client stays connected meanwhile.
    assert.equal(eventsWs.readyState, eventsWs.OPEN);
  });
}

/**
 * The operations component suite: an in-process agent (API over its unix socket, operations, the
 * reconcile manager with a fake `widget` kind) on one database engine. Run on PGlite
 * (operations.component.test.ts) and on PostgreSQL (integration/db/operations.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type WebSocket from 'ws';
import { call, collect, openSocket } from '../../test-support/agent-harness.ts';
import { defineSettleTests } from './settle-tests.ts';
import {
  startSuiteAgent,
  stored as storedColumn,
  widgetReconciler,
  type Agent,
  type AgentDatabase,
  type SuiteContext,
} from './suite-support.ts';
import { defineTaskTests } from './task-tests.ts';

export { pgliteAgentDatabase, type AgentDatabase } from './suite-support.ts';

/** Define the suite as `name` on `engine`; `skip` (a reason) leaves it out. */
export function defineOperationsSuite(
  name: string,
  engine: AgentDatabase,
  opts: { skip?: string | undefined } = {},
): void {
  describe(name, { skip: opts.skip ?? false }, () => {
    describe('one agent', () => {
      let agent: Agent | undefined;
      let events: any[] = [];
      let eventsWs: WebSocket | undefined;
      const widgets: SuiteContext['widgets'] = { behaviour: new Map(), applied: new Map(), desired: new Map() };
      const ctx: SuiteContext = {
        agent: () => {
          assert.ok(agent, 'the suite agent is running');
          return agent;
        },
        events: () => events,
        eventsWs: () => {
          assert.ok(eventsWs, 'the events websocket is open');
          return eventsWs;
        },
        widgets,
      };

      before(async () => {
        agent = await startSuiteAgent(engine, {
          reconcilers: [widgetReconciler(widgets)],
          pingMs: 150,
          operations: { sweepIntervalMs: 100 },
        });
        eventsWs = await openSocket(agent, '/1.0/events?type=operation');
        events = collect(eventsWs);
      });
      after(async () => {
        eventsWs?.close();
        await agent?.cleanup();
      });

      defineTaskTests(ctx);
      defineSettleTests(ctx);
    });

    describe('task ends written behind', () => {
      test('a task end is announced at once and written later; stop() writes what is still unwritten', async () => {
        const agent = await startSuiteAgent(engine, { operations: { writeBehindMs: 60_000 } });
        try {
          const op = await agent.ops.startTask(
            { class: 'task', description: 'Quick', project: 'default' },
            async () => ({ answer: 1 }),
          );
          const done = await call(agent, 'GET', `/1.0/operations/${op.id}/wait?timeout=5`);
          assert.equal(done.json.metadata.status_code, 200);
          const stored = async () => (await storedColumn(agent, op.id, 'status_code'))[0];
          assert.equal(await stored(), 103, 'not written yet');
          assert.ok(
            !(await call(agent, 'GET', '/1.0/operations')).json.metadata.includes(`/1.0/operations/${op.id}`),
            'not listed as running meanwhile',
          );
          await agent.ops.stop();
          assert.equal(await stored(), 200, 'written by stop()');
        } finally {
          await agent.cleanup();
        }
      });
    });
  });
}

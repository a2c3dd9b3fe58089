/** What the operations component suite (define-operations-suite.ts) shares between its groups of tests. */
import { eq, getTableColumns } from 'drizzle-orm';
import type WebSocket from 'ws';
import type { AgentOptions } from '../../agent.ts';
import { operations } from '../../desired/schema/index.ts';
import { TerminalError, type Reconciler } from '../../reconcilers/runtime/index.ts';
import { startTestAgent } from '../../test-support/agent-harness.ts';

export type Agent = Awaited<ReturnType<typeof startTestAgent>>;

/**
 * The database engine an agent of the suite runs on: a fresh database for each agent (`databaseUrl`
 * of a PostgreSQL one; undefined for PGlite in the agent's state directory), dropped after.
 */
export type AgentDatabase = () => Promise<{ databaseUrl: string | undefined; drop(): Promise<void> }>;

/** PGlite, in each agent's own temporary state directory (removed with it). */
export const pgliteAgentDatabase: AgentDatabase = async () => ({ databaseUrl: undefined, drop: async () => {} });

/** Start an agent of the suite on a fresh database of `engine`; cleanup() stops it and drops the database. */
export async function startSuiteAgent(engine: AgentDatabase, opts: AgentOptions): Promise<Agent> {
  const database = await engine();
  try {
    const agent = await startTestAgent(opts, { databaseUrl: database.databaseUrl });
    const cleanup = agent.cleanup;
    return Object.assign(agent, { cleanup: () => cleanup().finally(() => database.drop()) });
  } catch (e) {
    await database.drop();
    throw e;
  }
}

type Behaviour = 'ok' | 'terminal' | 'transient';

/** What the groups of tests get from the suite: its agent (started before them), its events, the widget kind. */
export interface SuiteContext {
  agent(): Agent;
  /** Operation events seen on the suite's events websocket. */
  events(): any[];
  eventsWs(): WebSocket;
  /** Per key: how the widget reconciler behaves, what it applied, and the desired generation. */
  widgets: { behaviour: Map<string, Behaviour>; applied: Map<string, number>; desired: Map<string, number> };
}

export const until = async (check: () => boolean | Promise<boolean>, what: string, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

/**
 * A fake kind for the engine: desired generation per key in memory, converged by "applying" it;
 * behaviour per key decides success, terminal or transient failure.
 */
export function widgetReconciler({ behaviour, applied, desired }: SuiteContext['widgets']): Reconciler {
  return {
    kind: 'widget',
    listKeys: async () => [...desired.keys()],
    async reconcile(key) {
      const mode = behaviour.get(key) ?? 'ok';
      if (mode === 'terminal') throw new TerminalError(`widget ${key} cannot be built: bad shape`);
      if (mode === 'transient') throw new Error(`widget ${key}: host busy`);
      const gen = desired.get(key);
      if (gen === undefined) return {};
      applied.set(key, gen);
      return { observedGeneration: gen };
    },
  };
}

const columns = Object.values(getTableColumns(operations));

/** The stored values of one column (by its SQL name) of an operation row: [] when it is not written. */
export async function stored(agent: Agent, id: string, column: string): Promise<unknown[]> {
  const c = columns.find((col) => col.name === column);
  if (!c) throw new Error(`operations has no column ${column}`);
  const rows = await agent.database.db.select({ v: c }).from(operations).where(eq(operations.id, id));
  return rows.map((r) => r.v);
}

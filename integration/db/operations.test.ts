import {
  defineOperationsSuite,
  type AgentDatabase,
} from '../../src/operations/component-suite/define-operations-suite.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

// The operations component suite (src/operations/operations.component.test.ts runs it on PGlite) on
// the local PostgreSQL 15 (SVCD_TEST_PG_URL, set by scripts/test.sh): each agent on a throw-away
// database, dropped after. There the agent is not the database's only writer: no operation is
// answered from memory but its own tasks and the ones it saw end.
const postgresAgentDatabase: AgentDatabase = async () => {
  const t = await createTestDatabase();
  return { databaseUrl: t.url, drop: () => t.drop() };
};

const skip = adminUrl ? undefined : 'SVCD_TEST_PG_URL is not set: run with scripts/test.sh (it starts PostgreSQL 15)';
if (skip) console.log(`# operations on PostgreSQL skipped: ${skip}`);
defineOperationsSuite('operations (component: agent + PostgreSQL + unix socket)', postgresAgentDatabase, { skip });

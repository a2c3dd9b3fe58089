import { defineOperationsSuite, pgliteAgentDatabase } from './component-suite/define-operations-suite.ts';

// The same suite runs on PostgreSQL in integration/db/operations.test.ts.
defineOperationsSuite('operations (component: agent + PGlite + unix socket)', pgliteAgentDatabase);

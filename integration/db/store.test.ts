import { defineStoreSuite } from './store-suite.ts';
import { openPgliteTarget, openPostgresTarget } from './targets.ts';

// One suite, both drivers: PGlite (the default store) in a temporary directory, and a fresh
// database on the local PostgreSQL 15 (SVCD_TEST_PG_URL).
defineStoreSuite('store on PGlite', openPgliteTarget);
defineStoreSuite('store on PostgreSQL', openPostgresTarget);

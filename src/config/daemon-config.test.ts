import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DaemonConfigError, loadDaemonConfig } from './daemon-config.ts';

test('the embedded database is a private PostgreSQL server unless SVCD_EMBEDDED_DATABASE says pglite', () => {
  assert.equal(loadDaemonConfig({}, 'h').embeddedDatabase, 'postgres');
  assert.equal(loadDaemonConfig({ SVCD_EMBEDDED_DATABASE: 'pglite' }, 'h').embeddedDatabase, 'pglite');
  assert.throws(() => loadDaemonConfig({ SVCD_EMBEDDED_DATABASE: 'sqlite' }, 'h'), (e: unknown) => e instanceof DaemonConfigError && /SVCD_EMBEDDED_DATABASE must be one of postgres, pglite/.test(e.message));
});

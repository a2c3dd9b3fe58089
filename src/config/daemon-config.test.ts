import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DaemonConfigError, loadDaemonConfig } from './daemon-config.ts';

test('the embedded database is a private PostgreSQL server unless SVCD_EMBEDDED_DATABASE says pglite', () => {
  assert.equal(loadDaemonConfig({}, 'h').embeddedDatabase, 'postgres');
  assert.equal(loadDaemonConfig({ SVCD_EMBEDDED_DATABASE: 'pglite' }, 'h').embeddedDatabase, 'pglite');
  assert.throws(
    () => loadDaemonConfig({ SVCD_EMBEDDED_DATABASE: 'sqlite' }, 'h'),
    (e: unknown) =>
      e instanceof DaemonConfigError && /SVCD_EMBEDDED_DATABASE must be one of postgres, pglite/.test(e.message),
  );
});

test("SVCD_SYSFS_ROOT and SVCD_DEV_ROOT: absent by default (the host's /sys and /dev), absolute paths when given", () => {
  const c = loadDaemonConfig({}, 'h');
  assert.equal(c.sysfsRoot, undefined);
  assert.equal(c.devRoot, undefined);
  const f = loadDaemonConfig({ SVCD_SYSFS_ROOT: '/tmp/fake/sys', SVCD_DEV_ROOT: '/tmp/fake/dev' }, 'h');
  assert.deepEqual([f.sysfsRoot, f.devRoot], ['/tmp/fake/sys', '/tmp/fake/dev']);
  assert.throws(
    () => loadDaemonConfig({ SVCD_DEV_ROOT: 'dev' }, 'h'),
    (e: unknown) => e instanceof DaemonConfigError && /SVCD_DEV_ROOT must be an absolute path/.test(e.message),
  );
});

test('SVCD_POSTGRES_BIN names the private server bin dir: absolute, unset by default', () => {
  assert.equal(loadDaemonConfig({}, 'h').postgresBinDir, undefined);
  assert.equal(loadDaemonConfig({ SVCD_POSTGRES_BIN: '/opt/pg/bin' }, 'h').postgresBinDir, '/opt/pg/bin');
  assert.throws(
    () => loadDaemonConfig({ SVCD_POSTGRES_BIN: 'pg/bin' }, 'h'),
    (e: unknown) => e instanceof DaemonConfigError && /SVCD_POSTGRES_BIN must be an absolute path/.test(e.message),
  );
});

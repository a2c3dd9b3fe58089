import { privatePostgresDirOf, privatePostgresUrl } from '../../src/host/postgres/private-postgres-args.ts';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { openDatabase } from '../../src/db/open-database.ts';
import { operations } from '../../src/desired/schema/index.ts';
import { repoRoot, startDaemon, type Daemon } from '../support/daemon.ts';
import { client } from '../support/http.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

const run = promisify(execFile);

async function startSvcd(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src/main.ts')], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH!, ...env },
      timeout: 30_000,
    });
    return { code: 0, stderr: '' };
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, stderr: err.stderr };
  }
}

describe('daemon settings are validated at start', () => {
  test('a relative SVCD_DIR, a bad DATABASE_URL or log level: exit 2 with a clear message', async () => {
    const a = await startSvcd({ SVCD_DIR: 'relative/dir' });
    assert.equal(a.code, 2);
    assert.match(a.stderr, /SVCD_DIR must be an absolute path/);
    const b = await startSvcd({ SVCD_DIR: '/tmp/svcd-never', DATABASE_URL: 'mysql://x' });
    assert.equal(b.code, 2);
    assert.match(b.stderr, /DATABASE_URL must start with postgres/);
    const c = await startSvcd({ SVCD_DIR: '/tmp/svcd-never', SVCD_LOG_LEVEL: 'loud' });
    assert.equal(c.code, 2);
    assert.match(c.stderr, /SVCD_LOG_LEVEL must be one of/);
    await assert.rejects(stat('/tmp/svcd-never'), 'nothing was created');
  });

  test('a second daemon on the same state directory refuses to start', async () => {
    const d = await startDaemon();
    try {
      const second = await startSvcd({ SVCD_DIR: d.stateDir });
      assert.equal(second.code, 1);
      assert.match(second.stderr, /already serving/);
      assert.equal((await client({ socketPath: d.socketPath }).get('/1.0')).status, 200, 'the first one still serves');
    } finally {
      await d.destroy();
    }
  });
});

// `embedded`: the default private PostgreSQL server, which survives the kill and is adopted by the restart.
for (const driver of ['embedded', 'pglite', 'postgres'] as const) {
  describe(`crash recovery on ${driver}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    after(async () => {
      for (const c of cleanups.reverse()) await c().catch(() => {});
    });

    test('after SIGKILL, state survives and operations left running end as Failure at the next start', {
      skip: driver === 'postgres' && !adminUrl ? 'SVCD_TEST_PG_URL not set' : false,
    }, async () => {
      const pg = driver === 'postgres' ? await createTestDatabase() : undefined;
      if (pg) cleanups.push(pg.drop);
      const node = 'crashy';
      const env = { SVCD_NODE_NAME: node, ...(driver === 'pglite' ? { SVCD_EMBEDDED_DATABASE: 'pglite' } : {}) };
      const d: Daemon = await startDaemon({ env, ...(pg ? { databaseUrl: pg.url } : {}) });
      cleanups.push(() => d.destroy());
      const api = client({ socketPath: d.socketPath });
      assert.equal((await api.post('/1.0/profiles', { name: 'survivor', config: { 'user.a': 'b' } })).status, 200);
      await d.kill();

      // While it is down, leave an operation "running" as a crash mid-task would (PGlite allows one process at a time).
      const embeddedUrl = driver === 'embedded' ? privatePostgresUrl(privatePostgresDirOf(d.stateDir)) : undefined;
      const stateDb = await openDatabase({ stateDir: d.stateDir, databaseUrl: pg?.url ?? embeddedUrl });
      const orphan = randomUUID();
      const now = new Date();
      await stateDb.db.insert(operations).values({
        id: orphan,
        class: 'task',
        description: 'Interrupted',
        statusCode: 103,
        node,
        createdAt: now,
        updatedAt: now,
      });
      await stateDb.close();

      await d.restart();
      const op = (await api.get(`/1.0/operations/${orphan}`)).json.metadata;
      assert.equal(op.status_code, 400);
      assert.equal(op.status, 'Failure');
      assert.match(op.err, /svcd stopped while this operation was running/);
      assert.deepEqual((await api.get('/1.0/profiles/survivor')).json.metadata.config, { 'user.a': 'b' });
      assert.deepEqual((await api.get('/1.0/profiles')).json.metadata, [
        '/1.0/profiles/default',
        '/1.0/profiles/survivor',
      ]);
    });
  });
}

describe('state directory', () => {
  test('the unix socket is mode 0660 and the server key is private', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-perm-'));
    const d = await startDaemon({ stateDir: dir });
    try {
      assert.equal((await stat(d.socketPath)).mode & 0o777, 0o660);
      assert.equal((await stat(path.join(dir, 'server.key'))).mode & 0o777, 0o600);
    } finally {
      await d.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * svcd on a PostgreSQL server (DATABASE_URL) that crashes: what the API acknowledged survives, and svcd
 * converges again once the server is back.
 *
 * The server is a throw-away cluster in a temp dir (made by svcd's private-server code) set to flush at
 * commit (`synchronous_commit = on`, as a server an operator runs) and to flush what does not wait only
 * every 10 s (`wal_writer_delay`), so that what svcd commits without waiting (Database.relaxed: runtime
 * rows, facts, settlements) is still unflushed when the postmaster is killed with SIGKILL. A desired write
 * that did not wait for its flush would be lost too: the create acknowledged just before the kill is
 * what this test checks first.
 *
 * Its first runs found svcd stuck for good after such a crash: postgres.js lost connections in ways it
 * never recovered from (integration/db/connection-loss.test.ts, patches/postgres+3.4.9.patch).
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { parsePostgresUrl } from '../../src/db/postgres-url.ts';
import { runCommand } from '../../src/host/exec.ts';
import { createPrivatePostgres, type PrivatePostgres } from '../../src/host/postgres/private-postgres.ts';
import { parsePostmasterPid, privatePostgresDirOf } from '../../src/host/postgres/private-postgres-args.ts';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

// Opt-in (SVCD_TEST_DB_CRASH=1) until it has run clean in CI a number of times: with the first three postgres.js
// fixes it passed 40 runs of 40 here and failed once in a clean-clone CI run (svcd did not converge the late
// container), most likely by the fourth, fixed since (docs/database.md, "A database server that goes away"). It prints
// the daemon's warnings and errors when it fails.
const skip =
  process.env.SVCD_TEST_DB_CRASH !== '1'
    ? 'opt-in: SVCD_TEST_DB_CRASH=1 (one failure in CI, most likely fixed since; see the comment above)'
    : ((await lxcSkipReason()) ?? (process.getuid?.() !== 0 ? 'needs root' : undefined));
const quiet = { info() {}, warn() {}, error() {} };

async function query<T>(url: string, text: string): Promise<T[]> {
  const target = parsePostgresUrl(url);
  const sql = postgres(target.url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 5,
    ...(target.host ? { host: target.host } : {}),
  });
  try {
    return [...(await sql.unsafe(text))] as T[];
  } finally {
    await sql.end({ timeout: 2 });
  }
}

describe('svcd on a PostgreSQL server that crashes', { skip }, () => {
  let pgDir = '';
  let imgDir = '';
  let server: PrivatePostgres | undefined;
  let url = '';
  let d: Daemon | undefined;
  let api: Client | undefined;

  before(async () => {
    await ensureRootSubids();
    pgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pgcrash-'));
    await chmod(pgDir, 0o711);
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    server = createPrivatePostgres({ stateDir: pgDir, run: runCommand, log: quiet });
    url = (await server.ensure()).url;
    // As an operator's server: flushed at commit. And what does not wait stays unflushed for 10 s.
    await query(url, "alter system set synchronous_commit = 'on'");
    await query(url, "alter system set wal_writer_delay = '10s'");
    await query(url, 'select pg_reload_conf()');
    d = await startDaemon({ databaseUrl: url, env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    await uploadBusybox(api, imgDir);
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir]);
    await server?.stop().catch(() => {});
    if (pgDir) await rm(pgDir, { recursive: true, force: true });
  });

  test('a create acknowledged just before the server is killed survives; svcd converges once it is back', async () => {
    try {
      await crashAndRecover();
    } catch (e) {
      // What svcd logged at warn and above: why it did not converge.
      const lines = (d?.output() ?? '').split('\n').filter((l) => /"level":(4|5|6)0/.test(l));
      throw new Error(
        `${(e as Error).message}\n--- the daemon's last warnings and errors ---\n${lines
          .slice(-40)
          .map((l) => l.slice(0, 600))
          .join('\n')}`,
      );
    }
  });

  async function crashAndRecover() {
    const a = api!;
    assert.equal((await query<{ s: string }>(url, "select current_setting('synchronous_commit') as s"))[0]?.s, 'on');
    await waitOp(a, await a.post('/1.0/containers', { name: 'kept', source: { type: 'image', alias: 'bb' } }));
    await waitOp(a, await a.put('/1.0/containers/kept/state', { action: 'start' }));
    // Acknowledged (202) and not waited for: its desired write has committed, and nothing after it need have.
    const late = await a.post('/1.0/containers', { name: 'late', source: { type: 'image', alias: 'bb' } });
    assert.equal(late.status, 202, late.text);

    const pm = parsePostmasterPid(await readFile(path.join(privatePostgresDirOf(pgDir), 'postmaster.pid'), 'utf8'));
    assert.ok(pm, 'the postmaster pid');
    process.kill(pm.pid, 'SIGKILL');
    await eventually(() => {
      try {
        process.kill(pm.pid, 0);
        return undefined;
      } catch {
        return true;
      }
    }, 'the postmaster gone');
    // Its backends go with it; the server starts again and replays its WAL.
    await eventually(
      async () =>
        (await server!.ensure().then(
          () => true,
          () => undefined,
        )) ?? undefined,
      'the server started again',
      60_000,
    );

    const rows = await query<{ name: string }>(url, 'select name from containers order by name');
    assert.deepEqual(
      rows.map((r) => r.name),
      ['kept', 'late'],
      'both creates were flushed before they were acknowledged',
    );

    // svcd reconnects and converges: the late container is created on the host and can start; the running
    // one is running and can stop, whatever of their runtime rows and facts the crash lost.
    await eventually(
      async () => ((await a.get('/1.0/containers/late')).status === 200 ? true : undefined),
      'svcd answers from the database again',
      30_000,
    );
    await eventually(
      async () => {
        const r = await a.put('/1.0/containers/late/state', { action: 'start' });
        if (r.status !== 202) return undefined;
        const done = await a.get(`${r.json.operation}/wait?timeout=20`);
        return done.json.metadata.status === 'Success' ? true : undefined;
      },
      'the late container starts',
      60_000,
    );
    assert.equal((await a.get('/1.0/containers/late/state')).json.metadata.status, 'Running');
    assert.equal((await a.get('/1.0/containers/kept/state')).json.metadata.status, 'Running');
    await waitOp(a, await a.put('/1.0/containers/kept/state', { action: 'stop', force: true }));
    assert.equal((await a.get('/1.0/containers/kept/state')).json.metadata.status, 'Stopped');
  }
});

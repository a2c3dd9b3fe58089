/**
 * svcd on a PostgreSQL server (DATABASE_URL) that is stopped for a while: the containers are
 * kept on their last desired state meanwhile (observers/offline-keeper.ts), writes answer 503 at once, and
 * once the server is back svcd converges what was asked before and after.
 *
 * The server is a throw-away cluster in a temp dir, made by svcd's private-server code.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { createPrivatePostgres, type PrivatePostgres } from '../../src/host/postgres/private-postgres.ts';
import { lxcIdOf, teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, eventually, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const skip = (await lxcSkipReason()) ?? (process.getuid?.() !== 0 ? 'needs root' : undefined);
const quiet = { info() {}, warn() {}, error() {} };

describe('svcd while its PostgreSQL server is stopped', { skip }, () => {
  let pgDir = '';
  let imgDir = '';
  let server: PrivatePostgres | undefined;
  let d: Daemon | undefined;
  let api: Client | undefined;

  before(async () => {
    await ensureRootSubids();
    pgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pgstop-'));
    await chmod(pgDir, 0o711);
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    server = createPrivatePostgres({ stateDir: pgDir, run: runCommand, log: quiet });
    const url = (await server.ensure()).url;
    d = await startDaemon({ databaseUrl: url, env: { SVCD_LOG_LEVEL: 'info' } });
    api = client({ socketPath: d.socketPath });
    await uploadBusybox(api, imgDir);
  });
  after(async () => {
    await server?.ensure().catch(() => {});
    await teardownContainers(d, api, [imgDir]);
    await server?.stop().catch(() => {});
    if (pgDir) await rm(pgDir, { recursive: true, force: true });
  });

  /** LXC's own view (the API cannot answer it without the database): state and init pid. */
  async function lxcState(id: string): Promise<{ state: string; pid: number }> {
    const r = await runCommand('lxc-info', ['-P', path.join(d!.stateDir, 'containers'), '-n', id, '-s', '-p']);
    const field = (k: string) => new RegExp(`^${k}:\\s*(\\S+)`, 'm').exec(r)?.[1] ?? '';
    return { state: field('State'), pid: Number(field('PID')) || 0 };
  }

  test('a killed container is started again, one started behind svcd’s back is stopped, writes answer 503; all converges after', async () => {
    const a = api!;
    await waitOp(a, await a.post('/1.0/containers', { name: 'up', source: { type: 'image', alias: 'bb' } }));
    await waitOp(a, await a.put('/1.0/containers/up/state', { action: 'start' }));
    await waitOp(a, await a.post('/1.0/containers', { name: 'down', source: { type: 'image', alias: 'bb' } }));
    const up = await lxcIdOf(d!.stateDir, 'up');
    const down = await lxcIdOf(d!.stateDir, 'down');
    const before = await lxcState(up);
    assert.equal(before.state, 'RUNNING');

    await server!.stop();
    // A write: refused at once, in the spec's envelope, and nothing recorded.
    const t0 = Date.now();
    const write = await a.patch('/1.0/containers/up', { config: { 'user.during': 'outage' } });
    assert.equal(write.status, 503, write.text);
    assert.equal(write.json.type, 'error');
    assert.equal(write.json.error_code, 503);
    assert.ok(Date.now() - t0 < 5_000, `answered after ${Date.now() - t0} ms`);

    // Killed behind svcd's back: running again, on a new init, within 10 s.
    process.kill(before.pid, 'SIGKILL');
    const killedAt = Date.now();
    const back = await eventually(
      async () => {
        const s = await lxcState(up);
        return s.state === 'RUNNING' && s.pid !== before.pid ? s : undefined;
      },
      'the killed container running again',
      10_000,
    );
    const tookMs = Date.now() - killedAt;
    // Started behind svcd's back while desired stopped: stopped again.
    await runCommand('lxc-start', ['-P', path.join(d!.stateDir, 'containers'), '-n', down]);
    await eventually(
      async () => ((await lxcState(down)).state === 'STOPPED' ? true : undefined),
      'the container desired stopped stopped again',
      40_000,
    );

    // The server back: writes work, and what was desired before the outage holds.
    await server!.ensure();
    await eventually(
      async () => {
        const r = await a.patch('/1.0/containers/up', { config: { 'user.after': 'outage' } });
        return r.status === 200 || r.status === 202 ? r : undefined;
      },
      'a write accepted once the server is back',
      30_000,
    );
    const c = await a.get('/1.0/containers/up');
    assert.equal(c.json.metadata.config['user.after'], 'outage');
    assert.equal(c.json.metadata.config['user.during'], undefined, 'the refused write left nothing');
    await eventually(
      async () => {
        const s = await a.get('/1.0/containers/up/state');
        return s.json.metadata?.status === 'Running' && s.json.metadata.pid === back.pid ? true : undefined;
      },
      'the API shows the container running on the init the keeper started',
      20_000,
    );
    assert.equal((await a.get('/1.0/containers/down/state')).json.metadata.status, 'Stopped');
    // It converges as usual again: a stop through the API.
    await waitOp(a, await a.put('/1.0/containers/up/state', { action: 'stop', force: true }));
    assert.equal((await lxcState(up)).state, 'STOPPED');
    assert.ok(
      d!.output().includes('the database cannot be reached: keeping containers'),
      'the daemon said it kept the containers',
    );
    console.log(`# running again ${tookMs} ms after the kill, the server stopped`);
  });
});

/**
 * Three members on one PostgreSQL server (DATABASE_URL) that is stopped for longer than the offline threshold and
 * started again: meanwhile writes through any member answer 503 at once and the containers keep running; after,
 * every member is Online again (none was lost or removed), and a member's verbs, forwarding, placement and events
 * between members work as before.
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
import { formCluster } from '../support/cluster.ts';
import { lxcIdOf, waitOp } from '../support/container-env.ts';
import { subscribeEvents } from '../support/events.ts';
import { eventually } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { importTestImage, startHosts, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = (await lxcSkipReason()) ?? (process.getuid?.() !== 0 ? 'needs root' : undefined);
const quiet = { info() {}, warn() {}, error() {} };
const THRESHOLD_S = 5;

describe('a cluster whose PostgreSQL server restarts', { skip }, () => {
  let pgDir = '';
  let imgDir: string | undefined;
  let server: PrivatePostgres | undefined;
  let hosts: Host[] = [];

  before(async () => {
    await ensureRootSubids();
    pgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-clpg-'));
    await chmod(pgDir, 0o711);
    server = createPrivatePostgres({ stateDir: pgDir, run: runCommand, log: quiet });
    const url = (await server.ensure()).url;
    hosts = await startHosts(3, { databaseUrl: url });
    const [a, b, c] = hosts as [Host, Host, Host];
    await formCluster(a, [b, c]);
    assert.equal(
      (await a.api.patch('/1.0', { config: { 'cluster.offline_threshold': String(THRESHOLD_S) } })).status,
      200,
    );
    ({ dir: imgDir } = await importTestImage(a, { alias: 'bb' }));
  });
  after(async () => {
    await server?.ensure().catch(() => {});
    for (const h of hosts)
      for (const name of ['dbr-b', 'dbr-c'])
        await h.api
          .put(`/1.0/containers/${name}/state`, { action: 'stop', force: true })
          .then((r) => (r.json?.operation ? h.api.get(`${r.json.operation}/wait?timeout=60`) : undefined))
          .then(() => h.api.delete(`/1.0/containers/${name}`))
          .then((r) => (r.json?.operation ? h.api.get(`${r.json.operation}/wait?timeout=60`) : undefined))
          .catch(() => {});
    await stopHosts(hosts, [imgDir]);
    await server?.stop().catch(() => {});
    if (pgDir) await rm(pgDir, { recursive: true, force: true });
  });

  async function lxcState(h: Host, name: string): Promise<string> {
    const id = await lxcIdOf(h.daemon.stateDir, name);
    const r = await runCommand('lxc-info', ['-P', path.join(h.daemon.stateDir, 'containers'), '-n', id, '-s']);
    return /^State:\s*(\S+)/m.exec(r)?.[1] ?? '';
  }

  test('stopped past the threshold, then back: no member lost, and verbs, forwarding and events work again', async () => {
    const [a, b, c] = hosts as [Host, Host, Host];
    const body = { name: 'dbr-b', source: { type: 'image', alias: 'bb' } };
    await waitOp(a.api, await a.api.post('/1.0/containers?target=b', body));
    await waitOp(a.api, await a.api.put('/1.0/containers/dbr-b/state', { action: 'start' }));
    assert.equal(await lxcState(b, 'dbr-b'), 'RUNNING');

    await server!.stop();
    for (const h of [a, c]) {
      const t0 = Date.now();
      const write = await h.api.patch('/1.0/containers/dbr-b', { config: { 'user.during': 'outage' } });
      assert.equal(write.status, 503, `${h.name}: ${write.text}`);
      assert.equal(write.json.error_code, 503);
      assert.ok(Date.now() - t0 < 5_000, `${h.name} answered after ${Date.now() - t0} ms`);
    }
    // Down for longer than the threshold: every heartbeat is older than it when the server comes back.
    await new Promise((r) => setTimeout(r, (THRESHOLD_S + 2) * 1000));
    assert.equal(await lxcState(b, 'dbr-b'), 'RUNNING', 'the container kept running');
    await server!.ensure();

    // Every member Online again, as every member sees it.
    for (const h of [a, b, c])
      await eventually(
        async () => {
          const r = await h.api.get('/1.0/cluster/members?recursion=1');
          const ms = (r.json?.metadata ?? []) as { server_name: string; status: string }[];
          return ms.length === 3 && ms.every((m) => m.status === 'Online') ? true : undefined;
        },
        `every member Online through ${h.name}`,
        THRESHOLD_S * 1000 + 20_000,
      );
    assert.equal((await c.api.get('/1.0/containers/dbr-b')).json.metadata.config['user.during'], undefined);

    // A verb through c, carried out by b, and its lifecycle event reaching a.
    const watch = await subscribeEvents(a.daemon.socketPath, '?type=lifecycle');
    try {
      await eventually(
        async () => {
          const r = await c.api.put('/1.0/containers/dbr-b/state', { action: 'stop', force: true });
          return r.status === 202 ? r : undefined;
        },
        'a stop accepted through c',
        20_000,
      ).then((r) => waitOp(c.api, r));
      assert.equal(await lxcState(b, 'dbr-b'), 'STOPPED');
      await eventually(
        () =>
          watch.events.some(
            (e) => e.location === 'b' && e.metadata?.source?.endsWith('/dbr-b') && /stopped/.test(e.metadata.action),
          ) || undefined,
        "b's instance-stopped event on a's stream",
        15_000,
      );
    } finally {
      watch.close();
    }
    // Placement on another member, through a third.
    const made = await b.api.post('/1.0/containers?target=c', {
      name: 'dbr-c',
      source: { type: 'image', alias: 'bb' },
    });
    await waitOp(b.api, made);
    assert.equal((await a.api.get('/1.0/containers/dbr-c')).json.metadata.location, 'c');
  });
});

import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { ensureRootSubids } from '../support/lxc-host.ts';
import { createTestDatabase } from '../support/postgres.ts';
import { eventually } from '../support/http.ts';
import { importTestImage, startHosts, stopHosts, type Host } from '../support/two-hosts.ts';
import { teardownContainers, waitOp } from '../support/container-env.ts';

/**
 * Daemons started on one DATABASE_URL before any cluster exists: each writes its own member row and renews
 * its heartbeat, and each converges only the containers it holds, never another's.
 */
describe('members on one database (not clustered yet)', {
  skip: !process.env.SVCD_TEST_PG_URL && 'SVCD_TEST_PG_URL unset',
}, () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: postgres.Sql;
  let a: Host;
  let b: Host;
  let imgDir: string | undefined;

  before(async () => {
    await ensureRootSubids();
    db = await createTestDatabase();
    sql = postgres(db.url, { max: 1, onnotice: () => {} });
    [a, b] = (await startHosts(2, { databaseUrl: db.url })) as [Host, Host];
    imgDir = (await importTestImage(a, { alias: 'bb' })).dir;
  });
  after(async () => {
    await teardownContainers(a?.daemon, a?.api);
    await stopHosts([a, b], [imgDir]);
    await sql?.end();
    await db?.drop();
  });

  test('each daemon has its own member row, with a heartbeat the database keeps renewing', async () => {
    const rows = await sql`select name, clustered, heartbeat_at from cluster_members order by name`;
    assert.deepEqual(
      rows.map((r) => [r.name, r.clustered]),
      [
        ['a', false],
        ['b', false],
      ],
    );
    const first = rows[1]!.heartbeat_at as Date;
    await eventually(async () => {
      const [r] = await sql`select heartbeat_at from cluster_members where name = 'b'`;
      return (r!.heartbeat_at as Date) > first || undefined;
    }, 'b renews its heartbeat');
  });

  test('a container created through a is held by a and converged only on a', async () => {
    await waitOp(
      a.api,
      await a.api.post('/1.0/containers', { name: 'clus-c1', source: { type: 'image', alias: 'bb' } }),
    );
    await waitOp(a.api, await a.api.put('/1.0/containers/clus-c1/state', { action: 'start' }));
    const [row] = await sql`select id, location from containers where name = 'clus-c1'`;
    assert.equal(row!.location, 'a');
    const onA = await readdir(path.join(a.daemon.stateDir, 'containers'));
    assert.ok(onA.includes(row!.id as string), 'a has the container');
    // b sees the row in the shared database but never builds it, even after a resync of its own keys.
    await b.daemon.stop();
    await b.daemon.restart();
    const onB = await readdir(path.join(b.daemon.stateDir, 'containers')).catch(() => [] as string[]);
    assert.ok(!onB.includes(row!.id as string), `b left a's container alone (${onB.join(',')})`);
    const st = await a.api.get('/1.0/containers/clus-c1/state');
    assert.equal(st.json.metadata.status, 'Running');
  });
});

import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { dialDatabaseTunnel } from '../../src/cluster/database-tunnel.ts';
import { CLUSTER_PASSWORD, joinCluster } from '../support/cluster.ts';
import { waitOp } from '../support/container-env.ts';
import { eventually, expectError } from '../support/http.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';
import { importTestImage, startHosts, stopHosts, type Host } from '../support/two-hosts.ts';

/**
 * A cluster on the default embedded engine: the bootstrap member's private PostgreSQL server is the cluster's
 * database, which the others reach through the database tunnel on its HTTPS listener, each as a role of its
 * own. Bootstrap, joins (one through a member that is not the database's), one database seen by all, a
 * container placed on a joiner, the tunnel's refusals, a joiner killed and started again, a forced removal.
 */
describe('a cluster of three members on the embedded engine', () => {
  let a: Host;
  let b: Host;
  let c: Host;
  let imgDir: string | undefined;
  let srcA: string | undefined;
  let srcB: string | undefined;
  let srcC: string | undefined;
  const psqlOnA = async (query: string) =>
    (
      await execa('psql', [
        '-h',
        path.join(a.daemon.stateDir, 'postgres'),
        '-U',
        'svcd',
        '-d',
        'postgres',
        '-Atc',
        query,
      ])
    ).stdout;
  const postmasterOf = async (h: Host) => {
    const pid = Number(
      (await readFile(path.join(h.daemon.stateDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '')).split(
        '\n',
      )[0],
    );
    if (!pid) return undefined;
    try {
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  };

  const onlyContainer = async (h: Host) => {
    const [id] = await readdir(path.join(h.daemon.stateDir, 'containers'));
    assert.ok(id, `${h.name} holds a container`);
    return id;
  };

  before(async () => {
    await ensureRootSubids();
    [a, b, c] = (await startHosts(3)) as [Host, Host, Host];
  });
  after(async () => {
    const list = (await a?.api.get('/1.0/containers?recursion=1').catch(() => undefined))?.json?.metadata;
    for (const ct of Array.isArray(list) ? list : []) {
      await a.api
        .put(`/1.0/containers/${ct.name}/state`, { action: 'stop', force: true })
        .then((r) => a.api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await a.api
        .delete(`/1.0/containers/${ct.name}`)
        .then((r) => a.api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    }
    await stopHosts([a, b, c], [imgDir, srcA, srcB, srcC]);
  });

  test('bootstrap, then joins by password (one through a member that does not serve the database)', async () => {
    assert.equal((await a.api.patch('/1.0', { config: { 'core.trust_password': CLUSTER_PASSWORD } })).status, 200);
    await waitOp(a.api, await a.api.put('/1.0/cluster', { server_name: 'a', enabled: true }));
    // A wrong password changes nothing on either side.
    const wrong = await b.api.put('/1.0/cluster', {
      server_name: 'b',
      enabled: true,
      server_address: `127.0.0.1:${b.port}`,
      cluster_address: `127.0.0.1:${a.port}`,
      cluster_certificate: a.cert,
      cluster_password: 'nope',
    });
    expectError(wrong, 403);
    assert.equal((await b.api.get('/1.0/cluster')).json.metadata.enabled, false);
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, ['/1.0/cluster/members/a']);

    // A server holding something cannot join (as in LXD): refused naming what it holds, nothing joined.
    const [pool] = (await b.api.get('/1.0/storage-pools')).json.metadata as string[];
    assert.ok(pool, 'b has a pool');
    const volumes = `${pool}/volumes/custom`;
    assert.equal((await b.api.post(volumes, { name: 'emb-held' })).status, 200);
    const held = await b.api.put('/1.0/cluster', {
      server_name: 'b',
      enabled: true,
      server_address: `127.0.0.1:${b.port}`,
      cluster_address: `127.0.0.1:${a.port}`,
      cluster_certificate: a.cert,
      cluster_password: CLUSTER_PASSWORD,
    });
    assert.match(expectError(held, 400), /holds 0 container\(s\) and 1 custom volume\(s\): only an empty server/);
    assert.equal((await b.api.get('/1.0/cluster')).json.metadata.enabled, false);
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, ['/1.0/cluster/members/a']);
    assert.equal((await b.api.delete(`${volumes}/emb-held`)).status, 200);

    // A pool whose source the user gave: each joiner gives its own (member_config), as GET /1.0/cluster asks.
    srcA = await mkdtemp(path.join(os.tmpdir(), 'svcd-src-a-'));
    srcB = await mkdtemp(path.join(os.tmpdir(), 'svcd-src-b-'));
    assert.equal(
      (await a.api.post('/1.0/storage-pools', { name: 'emb-src', driver: 'dir', config: { source: srcA } })).status,
      200,
    );
    const asked = (await a.api.get('/1.0/cluster')).json.metadata.member_config;
    assert.deepEqual(
      asked.filter((k: { name: string }) => k.name === 'emb-src'),
      [
        {
          entity: 'storage-pool',
          name: 'emb-src',
          key: 'source',
          description: '"source" property for storage pool "emb-src"',
        },
      ],
    );
    const join = (member_config: unknown[]) =>
      b.api.put('/1.0/cluster', {
        server_name: 'b',
        enabled: true,
        server_address: `127.0.0.1:${b.port}`,
        cluster_address: `127.0.0.1:${a.port}`,
        cluster_certificate: a.cert,
        cluster_password: CLUSTER_PASSWORD,
        member_config,
      });
    // Bad member_config: a key that is not member-specific, a pool the cluster does not have; nothing changes.
    assert.match(
      expectError(await join([{ entity: 'storage-pool', name: 'emb-src', key: 'rsync.bwlimit', value: '1' }]), 400),
      /rsync.bwlimit/,
    );
    assert.match(
      expectError(await join([{ entity: 'storage-pool', name: 'nope', key: 'source', value: srcB }]), 400),
      /nope/,
    );
    assert.equal((await b.api.get('/1.0/cluster')).json.metadata.enabled, false);
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, ['/1.0/cluster/members/a']);
    await waitOp(
      b.api,
      await join([
        { entity: 'storage-pool', name: 'emb-src', key: 'source', value: srcB },
        { entity: 'storage-pool', name: 'default', key: 'source', value: '' },
      ]),
    );
    // c asks b, which passes the request to a (only a's server makes roles).
    srcC = await mkdtemp(path.join(os.tmpdir(), 'svcd-src-c-'));
    await joinCluster(c, b, CLUSTER_PASSWORD, a.cert, [
      { entity: 'storage-pool', name: 'emb-src', key: 'source', value: srcC },
    ]);
    for (const h of [a, b, c]) {
      const env = (await h.api.get('/1.0')).json.metadata.environment;
      assert.equal(env.server_clustered, true, h.name);
      assert.equal(env.server_name, h.name);
      assert.equal(env.certificate, a.cert, `${h.name} presents the cluster certificate`);
      const members = (await h.api.get('/1.0/cluster/members?recursion=1')).json.metadata;
      assert.deepEqual(
        members.map((m: { server_name: string; status: string; url: string }) => [m.server_name, m.status, m.url]),
        [
          ['a', 'Online', `https://127.0.0.1:${a.port}`],
          ['b', 'Online', `https://127.0.0.1:${b.port}`],
          ['c', 'Online', `https://127.0.0.1:${c.port}`],
        ],
        h.name,
      );
    }
    // Each member made emb-src at its own source; it is Created once all have it.
    for (const dir of [srcA, srcB, srcC])
      await eventually(
        async () => ((await readdir(dir!)).length > 0 ? true : undefined),
        `emb-src made in ${dir}`,
        20_000,
      );
    await eventually(
      async () =>
        (await a.api.get('/1.0/storage-pools/emb-src')).json.metadata.status === 'Created' ? true : undefined,
      'emb-src Created',
      20_000,
    );
    // Each joiner has its own role on a's server, and its record of it is root's alone.
    assert.deepEqual(
      (await psqlOnA("select rolname from pg_roles where rolname like 'svcd_member_%' order by 1")).split('\n'),
      ['svcd_member_b', 'svcd_member_c'],
    );
    for (const h of [b, c]) {
      const file = path.join(h.daemon.stateDir, 'cluster-database.json');
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const record = JSON.parse(await readFile(file, 'utf8'));
      assert.deepEqual(
        [record.mode, record.user, record.address],
        ['member', `svcd_member_${h.name}`, `127.0.0.1:${a.port}`],
      );
      // Its own private server is stopped: the cluster's database is a's.
      assert.equal(await postmasterOf(h), undefined, `${h.name}'s private server is stopped`);
    }
    // A member joins only once.
    expectError(await b.api.put('/1.0/cluster', { server_name: 'b', enabled: true }), 400);
  });

  test('one database: what is written through one member is read through the others', async () => {
    const made = await c.api.post('/1.0/profiles', { name: 'emb-prof', config: { 'limits.cpu': '1' } });
    assert.equal(made.status, 200, made.text);
    for (const h of [a, b])
      assert.equal((await h.api.get('/1.0/profiles/emb-prof')).json.metadata.config['limits.cpu'], '1', h.name);
    const del = await b.api.delete('/1.0/profiles/emb-prof');
    assert.equal(del.json.status_code, 200, del.text);
    expectError(await a.api.get('/1.0/profiles/emb-prof'), 404);
  });

  test('a container placed on a joiner runs there, through any member', async () => {
    ({ dir: imgDir } = await importTestImage(a, { alias: 'bb' }));
    await waitOp(
      b.api,
      await b.api.post('/1.0/containers?target=c', { name: 'emb-t1', source: { type: 'image', alias: 'bb' } }),
    );
    await waitOp(a.api, await a.api.put('/1.0/containers/emb-t1/state', { action: 'start' }));
    for (const h of [a, b, c])
      assert.equal((await h.api.get('/1.0/containers/emb-t1/state')).json.metadata.status, 'Running', h.name);
    assert.equal((await readdir(path.join(c.daemon.stateDir, 'containers'))).length, 1, 'c holds it');
    assert.equal((await a.api.get('/1.0/containers/emb-t1')).json.metadata.location, 'c');
  });

  test('a running container moves to the serving member and back (stateless), through a third member', async () => {
    const lxcDirs = async (h: Host) => (await readdir(path.join(h.daemon.stateDir, 'containers'))).length;
    await waitOp(b.api, await b.api.post('/1.0/containers/emb-t1?target=a', { migration: true, live: false }));
    assert.equal((await c.api.get('/1.0/containers/emb-t1')).json.metadata.location, 'a');
    assert.equal((await a.api.get('/1.0/containers/emb-t1/state')).json.metadata.status, 'Running');
    await eventually(async () => ((await lxcDirs(c)) === 0 ? true : undefined), "c's copy removed", 15_000);
    await waitOp(b.api, await b.api.post('/1.0/containers/emb-t1?target=c', { migration: true, live: false }));
    assert.equal((await a.api.get('/1.0/containers/emb-t1')).json.metadata.location, 'c');
    assert.equal((await c.api.get('/1.0/containers/emb-t1/state')).json.metadata.status, 'Running');
    await eventually(async () => ((await lxcDirs(a)) === 0 ? true : undefined), "a's copy removed", 15_000);
  });

  test("the database tunnel: the cluster certificate is required, and the server's superuser never passes", async () => {
    const noCert = await a.guest().get('/internal/cluster/database', undefined, {
      Connection: 'Upgrade',
      Upgrade: 'svcd-postgres',
    });
    assert.equal(noCert.status, 403);
    const client = {
      cert: await readFile(path.join(b.daemon.stateDir, 'cluster.crt'), 'utf8'),
      key: await readFile(path.join(b.daemon.stateDir, 'cluster.key'), 'utf8'),
    };
    const { pin } = JSON.parse(await readFile(path.join(b.daemon.stateDir, 'cluster-database.json'), 'utf8'));
    const socket = await dialDatabaseTunnel({ address: `127.0.0.1:${a.port}`, pin, client });
    const body = Buffer.from('user\0svcd\0database\0postgres\0\0');
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + body.length, 0);
    head.writeInt32BE(196_608, 4);
    socket.write(Buffer.concat([head, body]));
    const answer = await new Promise<Buffer>((resolve) => {
      const got: Buffer[] = [];
      socket.on('data', (d: Buffer) => got.push(d));
      socket.on('close', () => resolve(Buffer.concat(got)));
      socket.resume();
    });
    assert.equal(answer.subarray(0, 1).toString(), 'E', 'a FATAL error response');
    assert.match(answer.toString('latin1'), /role "svcd" may not log in/);
    // A pin that is not the cluster's is refused by the member's own end.
    await assert.rejects(
      dialDatabaseTunnel({ address: `127.0.0.1:${a.port}`, pin: 'f'.repeat(64), client }),
      /does not present the cluster certificate/,
    );
  });

  test('the serving member killed: writes elsewhere answer 503 at once, containers keep running, all recover', async () => {
    await a.daemon.kill();
    const t0 = Date.now();
    const write = await b.api.post('/1.0/profiles', { name: 'emb-down' });
    assert.equal(write.status, 503, write.text);
    assert.match(write.json.error, /database cannot be reached/);
    assert.ok(Date.now() - t0 < 15_000, `refused within the connect timeout (${Date.now() - t0} ms)`);
    // c's container runs on, on its host, without the database; killed behind c's back, c starts it again.
    const onC = await onlyContainer(c);
    const info = async () =>
      (await execa('lxc-info', ['-P', path.join(c.daemon.stateDir, 'containers'), '-n', onC, '-s', '-p'])).stdout;
    const was = await info();
    assert.match(was, /RUNNING/);
    const pid = Number(/PID:\s*(\d+)/.exec(was)?.[1]);
    process.kill(pid, 'SIGKILL');
    await eventually(
      async () => {
        const now = await info();
        return /RUNNING/.test(now) && Number(/PID:\s*(\d+)/.exec(now)?.[1]) !== pid ? true : undefined;
      },
      "c's container running again without the database",
      10_000,
    );
    await a.daemon.restart();
    await eventually(
      async () => ((await b.api.post('/1.0/profiles', { name: 'emb-down' })).status === 200 ? true : undefined),
      'b writes again once a is back',
      30_000,
    );
    assert.equal((await a.api.get('/1.0/profiles/emb-down')).status, 200);
    await c.api.delete('/1.0/profiles/emb-down');
    for (const h of [b, c])
      await eventually(
        async () =>
          (await a.api.get(`/1.0/cluster/members/${h.name}`)).json.metadata.status === 'Online' ? true : undefined,
        `${h.name} Online`,
        30_000,
      );
  });

  test('a joiner killed and started again reaches the database again; a dead one is removed with force', async () => {
    await c.daemon.kill();
    await c.daemon.restart();
    await eventually(
      async () => ((await c.api.get('/1.0/cluster/members/c')).json?.metadata?.status === 'Online' ? true : undefined),
      'c Online again',
      30_000,
    );
    assert.equal((await c.api.get('/1.0/containers/emb-t1/state')).json.metadata.status, 'Running');
    assert.equal((await a.api.patch('/1.0', { config: { 'cluster.offline_threshold': '5' } })).status, 200);
    await b.daemon.kill();
    await eventually(
      async () => ((await a.api.get('/1.0/cluster/members/b')).json.metadata.status === 'Offline' ? true : undefined),
      'b Offline',
      20_000,
    );
    await waitOp(a.api, await a.api.delete('/1.0/cluster/members/b?force=1'));
    assert.deepEqual((await c.api.get('/1.0/cluster/members')).json.metadata, [
      '/1.0/cluster/members/a',
      '/1.0/cluster/members/c',
    ]);
    assert.equal(
      await psqlOnA("select rolname from pg_roles where rolname like 'svcd_member_%' order by 1"),
      'svcd_member_c',
    );
  });
});

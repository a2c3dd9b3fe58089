import assert from 'node:assert/strict';
import { execa } from 'execa';
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLUSTER_PASSWORD, formCluster, startClusterHosts, type TestCluster } from '../support/cluster.ts';
import { waitOp } from '../support/container-env.ts';
import { eventually, expectError } from '../support/http.ts';
import { subscribeEvents } from '../support/events.ts';
import { importTestImage, stopHosts, type Host } from '../support/two-hosts.ts';

/**
 * Three svcd daemons on one PostgreSQL database as one cluster: bootstrap, join by trust password, one
 * certificate, members, placement with and without target, forwarding of a container's verbs and of its
 * operations, a member killed (Offline within the threshold, the others keep serving, removed with force).
 */
describe('a cluster of three members on one database', {
  skip: !process.env.SVCD_TEST_PG_URL && 'SVCD_TEST_PG_URL unset',
}, () => {
  let cl: TestCluster;
  let a: Host;
  let b: Host;
  let c: Host;
  let imgDir: string | undefined;
  let fingerprint: string;
  /** The LXC containers on a member's host. */
  const onHost = (h: Host) => readdir(path.join(h.daemon.stateDir, 'containers')).catch(() => [] as string[]);

  before(async () => {
    cl = await startClusterHosts(3);
    [a, b, c] = cl.hosts as [Host, Host, Host];
    ({ dir: imgDir, fingerprint } = await importTestImage(a, { alias: 'bb' }));
  });
  after(async () => {
    for (const h of [a, b]) {
      const list = (await h?.api.get('/1.0/containers?recursion=1').catch(() => undefined))?.json?.metadata;
      for (const ct of Array.isArray(list) ? list : []) {
        if (ct.location !== h.name) continue;
        await h.api
          .put(`/1.0/containers/${ct.name}/state`, { action: 'stop', force: true })
          .then((r) => h.api.get(`${r.json.operation}/wait?timeout=60`))
          .catch(() => {});
        await h.api
          .delete(`/1.0/containers/${ct.name}`)
          .then((r) => h.api.get(`${r.json.operation}/wait?timeout=60`))
          .catch(() => {});
      }
    }
    await stopHosts([a, b, c], [imgDir]);
    await cl?.drop();
  });

  test('bootstrap and join: one certificate, every member listed Online', async () => {
    // Bad input first: a join without the password, with the wrong one, to a cluster not bootstrapped.
    expectError(
      await b.api.put('/1.0/cluster', {
        enabled: true,
        cluster_address: `127.0.0.1:${a.port}`,
        cluster_certificate: a.cert,
      }),
      400,
    );
    expectError(await b.api.put('/1.0/cluster', { enabled: true, server_name: 'other' }), 400);
    await formCluster(a, []);
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
    const { joinCluster } = await import('../support/cluster.ts');
    await joinCluster(b, a, CLUSTER_PASSWORD);
    await joinCluster(c, a, CLUSTER_PASSWORD);
    for (const h of [a, b, c]) {
      const env = (await h.api.get('/1.0')).json.metadata.environment;
      assert.equal(env.server_clustered, true, h.name);
      assert.equal(env.server_name, h.name);
      assert.equal(env.certificate, a.cert, `${h.name} presents the cluster certificate`);
      assert.equal((await h.api.get('/1.0/cluster')).json.metadata.enabled, true);
    }
    const members = (await c.api.get('/1.0/cluster/members?recursion=1')).json.metadata;
    assert.deepEqual(
      members.map((m: { server_name: string; status: string; url: string }) => [m.server_name, m.status, m.url]),
      [
        ['a', 'Online', `https://127.0.0.1:${a.port}`],
        ['b', 'Online', `https://127.0.0.1:${b.port}`],
        ['c', 'Online', `https://127.0.0.1:${c.port}`],
      ],
    );
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, [
      '/1.0/cluster/members/a',
      '/1.0/cluster/members/b',
      '/1.0/cluster/members/c',
    ]);
    const one = (await b.api.get('/1.0/cluster/members/a')).json.metadata;
    assert.equal(one.name, 'a');
    assert.equal(one.state, 'Online');
    assert.equal(one.database, true);
    expectError(await b.api.get('/1.0/cluster/members/nope'), 404);
    // A member joins only once.
    expectError(await b.api.put('/1.0/cluster', { server_name: 'b', enabled: true }), 400);
  });

  test('a pool defined through one member is made on every member, Created once all have it', async () => {
    assert.equal((await a.api.post('/1.0/storage-pools', { name: 'clus-pool', driver: 'dir' })).status, 200);
    const p = await eventually(
      async () => {
        const m = (await b.api.get('/1.0/storage-pools/clus-pool')).json.metadata;
        return m.status === 'Created' ? m : undefined;
      },
      'clus-pool Created on every member',
      20_000,
    );
    assert.deepEqual(p.locations, ['a', 'b', 'c']);
    for (const h of [a, b, c])
      assert.ok((await readdir(path.join(h.daemon.stateDir, 'storage-pools'))).includes('clus-pool'), h.name);
    // Deleted through one member: every member removes its own part, and the name is free once all did.
    assert.equal((await c.api.delete('/1.0/storage-pools/clus-pool')).status, 200);
    expectError(await a.api.get('/1.0/storage-pools/clus-pool'), 404);
    for (const h of [a, b, c])
      await eventually(
        async () => !(await readdir(path.join(h.daemon.stateDir, 'storage-pools'))).includes('clus-pool') || undefined,
        `clus-pool removed from ${h.name}'s host`,
        15_000,
      );
    const again = await eventually(
      async () => {
        const r = await b.api.post('/1.0/storage-pools', { name: 'clus-pool', driver: 'dir' });
        return r.status === 200 ? r : undefined;
      },
      'clus-pool made again once every member removed its part',
      15_000,
    );
    assert.equal(again.status, 200);
    assert.equal((await a.api.delete('/1.0/storage-pools/clus-pool')).status, 200);
  });

  test('a pool defined member by member (?target=) is Pending, on no host, then created on all with their own sources', async (t) => {
    const src = (h: Host) => path.join(path.dirname(h.daemon.stateDir), `${path.basename(h.daemon.stateDir)}-two-step`);
    // The sources given are the user's: they outlive the pool, and go with the test, also when it fails.
    t.after(() => Promise.all([a, b].map((h) => rm(src(h), { recursive: true, force: true }))));
    // Two members defined at once through different members: one pending row with both.
    const [ra, rb] = await Promise.all([
      c.api.post('/1.0/storage-pools?target=a', { name: 'two-step', driver: 'dir', config: { source: src(a) } }),
      b.api.post('/1.0/storage-pools?target=b', { name: 'two-step', driver: 'dir', config: { source: src(b) } }),
    ]);
    assert.equal(ra.status, 200, ra.text);
    assert.equal(rb.status, 200, rb.text);
    assert.match(
      expectError(await a.api.post('/1.0/storage-pools?target=a', { name: 'two-step', driver: 'dir' }), 400),
      /already defined on member "a"/,
    );
    assert.match(
      expectError(
        await a.api.post('/1.0/storage-pools?target=c', {
          name: 'two-step',
          driver: 'dir',
          config: { 'rsync.bwlimit': '1MB' },
        }),
        400,
      ),
      /may not be used as member-specific key/,
    );
    assert.match(
      expectError(await a.api.post('/1.0/storage-pools?target=c', { name: 'two-step', driver: 'btrfs' }), 400),
      /doesn't match driver/,
    );
    expectError(await a.api.post('/1.0/storage-pools?target=nope', { name: 'two-step', driver: 'dir' }), 404);
    const pending = (await c.api.get('/1.0/storage-pools/two-step')).json.metadata;
    assert.equal(pending.status, 'Pending');
    assert.deepEqual(pending.locations, ['a', 'b']);
    assert.equal((await a.api.get('/1.0/storage-pools/two-step?target=b')).json.metadata.config.source, src(b));
    // Not yet on every member: refused, and nothing on any host.
    assert.match(
      expectError(await a.api.post('/1.0/storage-pools', { name: 'two-step', driver: 'dir' }), 400),
      /not defined on nodes: c/,
    );
    // Nothing may be put on it meanwhile.
    expectError(await a.api.post('/1.0/storage-pools/two-step/volumes/custom', { name: 'v' }), 400);
    assert.equal((await a.api.post('/1.0/storage-pools?target=c', { name: 'two-step', driver: 'dir' })).status, 200);
    assert.match(
      expectError(
        await a.api.post('/1.0/storage-pools', { name: 'two-step', driver: 'dir', config: { source: '/x' } }),
        400,
      ),
      /cluster member specific/,
    );
    for (const h of [a, b])
      assert.equal(
        await stat(src(h)).then(
          () => true,
          () => false,
        ),
        false,
        `nothing made on ${h.name} yet`,
      );
    // Created: on every member, each with its own source (c with the place svcd chooses).
    const done = await b.api.post('/1.0/storage-pools', { name: 'two-step', driver: 'dir' });
    assert.equal(done.status, 200, done.text);
    const p = await eventually(
      async () => {
        const m = (await c.api.get('/1.0/storage-pools/two-step')).json.metadata;
        return m.status === 'Created' ? m : undefined;
      },
      'two-step Created on every member',
      20_000,
    );
    assert.deepEqual(p.locations, ['a', 'b', 'c']);
    for (const h of [a, b]) assert.ok((await stat(src(h))).isDirectory(), `${h.name}'s own source`);
    assert.ok((await readdir(path.join(c.daemon.stateDir, 'storage-pools'))).includes('two-step'));
    expectError(await a.api.post('/1.0/storage-pools?target=a', { name: 'two-step', driver: 'dir' }), 400);
    // Removed as any pool; a pending one only loses its row.
    assert.equal((await a.api.delete('/1.0/storage-pools/two-step')).status, 200);
    assert.equal((await a.api.post('/1.0/storage-pools?target=c', { name: 'two-left', driver: 'dir' })).status, 200);
    assert.equal((await b.api.delete('/1.0/storage-pools/two-left')).status, 200);
    expectError(await c.api.get('/1.0/storage-pools/two-left'), 404);
  });

  test('a network defined member by member (?target=) is Pending, on no host, then created', async (t) => {
    const net = `tsn${process.pid % 100000}`;
    // Each member's own external interface: a veth pair this test makes (and removes with the bridge).
    const ext = (h: Host) => ({ 'bridge.external_interfaces': `${net}${h.name}` });
    // Also when an assertion fails half-way: the veths and the bridge go (the daemons' own parts go with them).
    t.after(async () => {
      for (const link of [`${net}a`, `${net}b`, net]) await execa('ip', ['link', 'del', link]).catch(() => {});
    });
    for (const h of [a, b])
      await execa('ip', ['link', 'add', `${net}${h.name}`, 'type', 'veth', 'peer', 'name', `${net}${h.name}p`]);
    for (const h of [a, b])
      assert.equal((await c.api.post(`/1.0/networks?target=${h.name}`, { name: net, config: ext(h) })).status, 200);
    expectError(await a.api.post(`/1.0/networks?target=a`, { name: net }), 400);
    assert.match(
      expectError(await a.api.post('/1.0/networks?target=c', { name: net, config: { 'ipv4.nat': 'false' } }), 400),
      /may not be used as member-specific key/,
    );
    const pending = (await b.api.get(`/1.0/networks/${net}`)).json.metadata;
    assert.equal(pending.status, 'Pending');
    assert.deepEqual(pending.locations, ['a', 'b']);
    assert.equal(
      (await c.api.get(`/1.0/networks/${net}?target=b`)).json.metadata.config['bridge.external_interfaces'],
      `${net}b`,
    );
    const global = { 'ipv4.address': 'none', 'ipv6.address': 'none' };
    assert.match(
      expectError(await a.api.post('/1.0/networks', { name: net, config: global }), 400),
      /not defined on nodes: c/,
    );
    expectError(await a.api.patch(`/1.0/networks/${net}`, { config: { 'ipv4.nat': 'false' } }), 400);
    const link = await stat(`/sys/class/net/${net}`).then(
      () => true,
      () => false,
    );
    assert.equal(link, false, 'no bridge while pending');
    assert.equal((await a.api.post('/1.0/networks?target=c', { name: net })).status, 200);
    assert.match(
      expectError(await a.api.post('/1.0/networks', { name: net, config: { ...global, ...ext(a) } }), 400),
      /cluster member specific/,
    );
    // The members share this machine's kernel: one bridge, made by whichever member comes first.
    const done = await b.api.post('/1.0/networks', { name: net, config: global });
    assert.equal(done.status, 200, done.text);
    // Created once every member's host shows it (network_runtime), each member's row its own.
    const n = await eventually(
      async () => {
        const m = (await c.api.get(`/1.0/networks/${net}`)).json.metadata;
        return m.status === 'Created' ? m : undefined;
      },
      `${net} Created on every member`,
      15_000,
    );
    assert.deepEqual(n.locations, ['a', 'b', 'c']);
    assert.equal(n.config['ipv4.address'], 'none');
    assert.ok((await stat(`/sys/class/net/${net}`)).isDirectory());
    // a's and b's own interfaces are in it (c gave none).
    for (const h of [a, b])
      await eventually(
        () => stat(`/sys/class/net/${net}/brif/${net}${h.name}`).then(() => true),
        `${h.name}'s own interface in the bridge (each member converges it)`,
        15_000,
      );
    const netDir = (h: Host) => path.join(h.daemon.stateDir, 'networks', net);
    const dirOn = (h: Host) =>
      stat(netDir(h)).then(
        () => true,
        () => false,
      );
    for (const h of [a, b, c])
      await eventually(async () => (await dirOn(h)) || undefined, `${net}'s directory on ${h.name}`, 15_000);
    assert.equal((await a.api.delete(`/1.0/networks/${net}`)).status, 200);
    // Every member removes its own part (its directory, its dnsmasq), not only the member asked.
    for (const h of [a, b, c])
      await eventually(async () => !(await dirOn(h)) || undefined, `${net} removed from ${h.name}'s host`, 15_000);
    for (const h of [a, b]) await execa('ip', ['link', 'del', `${net}${h.name}`]).catch(() => {});
    // A pending one only loses its row.
    assert.equal((await a.api.post('/1.0/networks?target=a', { name: `${net}x` })).status, 200);
    assert.equal((await c.api.delete(`/1.0/networks/${net}x`)).status, 200);
    expectError(await b.api.get(`/1.0/networks/${net}x`), 404);
  });

  test('a create with target runs on that member, its verbs and operations are forwarded there', async () => {
    // Through c, placed on b: b builds it (with the image fetched from a), nobody else does.
    await waitOp(
      c.api,
      await c.api.post('/1.0/containers?target=b', { name: 'clus-t1', source: { type: 'image', alias: 'bb' } }),
    );
    const row = (await a.api.get('/1.0/containers/clus-t1')).json.metadata;
    assert.equal(row.location, 'b');
    // Started through a: the state change, its operation and /wait all go to b.
    await waitOp(a.api, await a.api.put('/1.0/containers/clus-t1/state', { action: 'start' }));
    for (const h of [a, b, c])
      assert.equal((await h.api.get('/1.0/containers/clus-t1/state')).json.metadata.status, 'Running', h.name);
    const onB = await onHost(b);
    assert.equal(onB.length, 1, 'b holds it');
    assert.deepEqual(await onHost(a), []);
    assert.deepEqual(await onHost(c), []);
    // b fetched the image from a, where it was imported.
    assert.ok((await readdir(path.join(b.daemon.stateDir, 'images'))).includes(fingerprint));
    // The list through any member shows every member's containers with their location.
    const listed = (await c.api.get('/1.0/containers?recursion=1')).json.metadata.map(
      (x: { name: string; location: string; status: string }) => [x.name, x.location, x.status],
    );
    assert.deepEqual(listed, [['clus-t1', 'b', 'Running']]);
    // A name is unique across the cluster.
    expectError(
      await a.api.post('/1.0/containers?target=c', { name: 'clus-t1', source: { type: 'image', alias: 'bb' } }),
      409,
    );
    // An unknown target is refused, naming it.
    const bad = await a.api.post('/1.0/containers?target=zz', {
      name: 'clus-t2',
      source: { type: 'image', alias: 'bb' },
    });
    expectError(bad, 404);
    assert.match(bad.json.error, /zz/);
  });

  test('concurrent creates of one name through different members give exactly one container', async () => {
    const body = { name: 'clus-race', source: { type: 'image', alias: 'bb' } };
    const res = await Promise.all([
      a.api.post('/1.0/containers?target=a', body),
      b.api.post('/1.0/containers?target=b', body),
      c.api.post('/1.0/containers?target=c', body),
    ]);
    assert.deepEqual(res.map((r) => r.status).sort(), [202, 409, 409], res.map((r) => r.text).join('\n'));
    const won = res.find((r) => r.status === 202)!;
    await a.api.get(`${won.json.operation}/wait?timeout=120`);
    const list = (await b.api.get('/1.0/containers?recursion=1')).json.metadata.filter(
      (x: { name: string }) => x.name === 'clus-race',
    );
    assert.equal(list.length, 1);
    await waitOp(c.api, await c.api.delete('/1.0/containers/clus-race'));
  });

  test('without target a create goes to the member holding fewest containers', async () => {
    await waitOp(
      b.api,
      await b.api.post('/1.0/containers', { name: 'clus-p1', source: { type: 'image', alias: 'bb' } }),
    );
    const at = (await b.api.get('/1.0/containers/clus-p1')).json.metadata.location;
    assert.notEqual(at, 'b', 'b already holds one');
  });

  test('a member restarted: what it emitted before the others were back reaches them, once', async () => {
    const watch = await subscribeEvents(a.daemon.socketPath, '?type=lifecycle');
    try {
      await b.daemon.kill();
      await b.daemon.restart();
      // At once through b's own socket: a's relay has most likely not reconnected to b's new process yet.
      const name = `evt-replay-${process.pid}`;
      assert.equal((await b.api.post('/1.0/profiles', { name })).status, 200);
      const mine = () =>
        watch.events.filter(
          (e) =>
            e.location === 'b' && e.metadata?.action === 'profile-created' && e.metadata?.source?.endsWith(`/${name}`),
        );
      await eventually(() => (mine().length ? true : undefined), "b's event on a's events socket", 15_000);
      await new Promise((r) => setTimeout(r, 2_500));
      assert.equal(mine().length, 1, 'once');
      await b.api.delete(`/1.0/profiles/${name}`);
    } finally {
      watch.close();
    }
  });

  test('a killed member goes Offline within the threshold; the others keep serving; it is removed with force', async () => {
    assert.equal((await a.api.patch('/1.0', { config: { 'cluster.offline_threshold': '5' } })).status, 200);
    // Whatever c held goes with it: only a and b's containers are left afterwards.
    await waitOp(
      a.api,
      await a.api.post('/1.0/containers?target=c', { name: 'clus-onc', source: { type: 'image', alias: 'bb' } }),
    );
    // A running member is not renamed behind its back (its name is its SVCD_NODE_NAME).
    assert.match(expectError(await a.api.post('/1.0/cluster/members/c', { server_name: 'c2' }), 400), /running/);
    // c holds fewest, so a create without target would go to c.
    const held = async () => {
      const list = (await a.api.get('/1.0/containers?recursion=1')).json.metadata as { location: string }[];
      return (m: string) => list.filter((x) => x.location === m).length;
    };
    for (let i = 0, n = await held(); n('a') <= n('c') || n('b') <= n('c'); i++, n = await held()) {
      const on = n('a') <= n('c') ? 'a' : 'b';
      const body = { name: `clus-fill${i}`, source: { type: 'image', alias: 'bb' } };
      await waitOp(a.api, await a.api.post(`/1.0/containers?target=${on}`, body));
    }
    await c.daemon.kill();
    const t0 = Date.now();
    // Dead (shown Offline or not yet): a create without target is placed on a member that answers.
    const placed = await waitOp(
      b.api,
      await b.api.post('/1.0/containers', { name: 'clus-placed', source: { type: 'image', alias: 'bb' } }),
    );
    assert.ok(Date.now() - t0 < 4_000, `placed after ${Date.now() - t0} ms`);
    const where = (await a.api.get('/1.0/containers/clus-placed')).json.metadata.location;
    assert.ok(['a', 'b'].includes(where), `${where}: ${JSON.stringify(placed)}`);
    await eventually(
      async () => {
        const m = (await a.api.get('/1.0/cluster/members/c')).json.metadata;
        return m.status === 'Offline' ? m : undefined;
      },
      'c shown Offline',
      15_000,
    );
    assert.ok(Date.now() - t0 < 5_000 + 3_000 + 2_000, `Offline after ${Date.now() - t0} ms`);
    // a and b keep serving reads and writes.
    await waitOp(a.api, await a.api.put('/1.0/containers/clus-t1/state', { action: 'stop', force: true }));
    assert.equal((await b.api.get('/1.0/containers/clus-t1/state')).json.metadata.status, 'Stopped');
    // What c holds answers at once, naming it.
    const t1 = Date.now();
    const gone = await b.api.get('/1.0/containers/clus-onc/state');
    assert.equal(gone.status, 503, gone.text);
    assert.match(gone.json.error, /"c"/);
    assert.ok(Date.now() - t1 < 2_000, `answered after ${Date.now() - t1} ms`);
    // Lists are served from the database: c's container is still listed, with its location.
    const names = (await a.api.get('/1.0/containers?recursion=1')).json.metadata.map(
      (x: { name: string; location: string }) => `${x.name}@${x.location}`,
    );
    assert.ok(names.includes('clus-onc@c'), names.join(' '));
    // An offline member may be renamed; removal without force is refused; with force it goes, with what it held.
    assert.equal((await a.api.post('/1.0/cluster/members/c', { server_name: 'c2' })).status, 200);
    expectError(await b.api.get('/1.0/cluster/members/c'), 404);
    expectError(await b.api.delete('/1.0/cluster/members/c2'), 400);
    await waitOp(b.api, await b.api.delete('/1.0/cluster/members/c2?force=1'));
    expectError(await a.api.get('/1.0/containers/clus-onc'), 404);
    // An online member removes itself only when it holds nothing (the refusal comes from b itself).
    assert.match(expectError(await a.api.delete('/1.0/cluster/members/b'), 400), /holds \d+ container/);
    assert.deepEqual((await a.api.get('/1.0/cluster/members')).json.metadata, [
      '/1.0/cluster/members/a',
      '/1.0/cluster/members/b',
    ]);
  });
});

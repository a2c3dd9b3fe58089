import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, type Client } from '../support/http.ts';

describe('profiles and projects over the unix socket', () => {
  let d: Daemon;
  let api: Client;
  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => d?.destroy());

  test('first start: the default project and profile exist', async () => {
    assert.deepEqual((await api.get('/1.0/projects')).json.metadata, ['/1.0/projects/default']);
    assert.deepEqual((await api.get('/1.0/profiles')).json.metadata, ['/1.0/profiles/default']);
    const p = (await api.get('/1.0/projects/default')).json.metadata;
    assert.equal(p.config['features.profiles'], 'true');
    assert.deepEqual(p.used_by, ['/1.0/profiles/default']);
  });

  test('profile CRUD: create, recursion, GET with ETag, PUT replaces, PATCH merges, stale ETag → 412', async () => {
    const created = await api.post('/1.0/profiles', {
      name: 'web',
      description: 'Web',
      config: { 'limits.cpu': '2', 'user.tier': 'front' },
      devices: {},
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.location, '/1.0/profiles/web');
    expectError(await api.post('/1.0/profiles', { name: 'web' }), 409);
    const all = (await api.get('/1.0/profiles?recursion=1')).json.metadata;
    assert.deepEqual(
      all.map((p: { name: string }) => p.name),
      ['default', 'web'],
    );
    const got = await api.get('/1.0/profiles/web');
    assert.deepEqual(got.json.metadata, {
      name: 'web',
      description: 'Web',
      config: { 'limits.cpu': '2', 'user.tier': 'front' },
      devices: {},
      used_by: [],
    });
    const etag = got.headers.etag!;
    assert.equal(
      (
        await api.patch(
          '/1.0/profiles/web',
          { config: { 'limits.memory': '1GiB', 'user.tier': '' } },
          { 'If-Match': etag },
        )
      ).status,
      200,
    );
    const patched = await api.get('/1.0/profiles/web');
    assert.deepEqual(patched.json.metadata.config, { 'limits.cpu': '2', 'limits.memory': '1GiB' });
    assert.equal(patched.json.metadata.description, 'Web');
    assert.notEqual(patched.headers.etag, etag);
    expectError(await api.put('/1.0/profiles/web', { config: {} }, { 'If-Match': etag }), 412);
    assert.equal(
      (
        await api.put(
          '/1.0/profiles/web',
          { config: { 'boot.autostart': 'true' } },
          { 'If-Match': patched.headers.etag! },
        )
      ).status,
      200,
    );
    const put = (await api.get('/1.0/profiles/web')).json.metadata;
    assert.deepEqual(put.config, { 'boot.autostart': 'true' });
    assert.equal(put.description, '', 'PUT replaces the description too');
  });

  test('devices and config are validated before anything is written', async () => {
    expectError(await api.patch('/1.0/profiles/web', { devices: { eth0: { type: 'nic', nictype: 'bridged' } } }), 400);
    expectError(await api.patch('/1.0/profiles/web', { devices: { x: { type: 'pci' } } }), 400);
    expectError(await api.patch('/1.0/profiles/web', { config: { 'limits.memory': 'lots' } }), 400);
    expectError(await api.patch('/1.0/profiles/web', { config: { 'volatile.eth0.hwaddr': '00:16:3e:00:00:01' } }), 400);
    const ok = await api.patch('/1.0/profiles/web', {
      devices: {
        eth0: { type: 'nic', nictype: 'bridged', parent: 'br0', name: 'eth0' },
        data: { type: 'disk', path: '/srv', source: '/srv/data' },
      },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(Object.keys((await api.get('/1.0/profiles/web')).json.metadata.devices).sort(), ['data', 'eth0']);
  });

  test('rename by POST answers 204 + Location; existing name → 409; default → 403', async () => {
    const r = await api.post('/1.0/profiles/web', { name: 'frontend' });
    assert.equal(r.status, 204);
    assert.equal(r.headers.location, '/1.0/profiles/frontend');
    expectError(await api.get('/1.0/profiles/web'), 404);
    assert.equal((await api.get('/1.0/profiles/frontend')).status, 200);
    await api.post('/1.0/profiles', { name: 'other' });
    expectError(await api.post('/1.0/profiles/frontend', { name: 'other' }), 409);
    expectError(await api.post('/1.0/profiles/default', { name: 'x' }), 403);
    expectError(await api.delete('/1.0/profiles/default'), 403);
    expectError(await api.post('/1.0/profiles/missing', { name: 'x' }), 404);
  });

  test('filter= on collections: key eq value, case-insensitive; empty filter = all', async () => {
    const f = (q: string) =>
      api
        .get(`/1.0/profiles?recursion=1&filter=${encodeURIComponent(q)}`)
        .then((r) => r.json.metadata.map((p: { name: string }) => p.name));
    assert.deepEqual(await f('name eq FRONTEND'), ['frontend']);
    assert.deepEqual(await f('config.boot.autostart eq true'), ['frontend']);
    assert.deepEqual(await f('name ne frontend and name ne other'), ['default']);
    assert.deepEqual(await f('name eq other or name eq default'), ['default', 'other']);
    assert.deepEqual((await api.get('/1.0/profiles?filter=')).json.metadata.length, 3);
    assert.deepEqual((await api.get(`/1.0/profiles?filter=${encodeURIComponent('name eq other')}`)).json.metadata, [
      '/1.0/profiles/other',
    ]);
    expectError(await api.get(`/1.0/profiles?filter=${encodeURIComponent('name like x')}`), 400);
  });

  test('delete answers 202 with a sync envelope', async () => {
    const r = await api.delete('/1.0/profiles/other');
    assert.equal(r.status, 202);
    assert.equal(r.json.type, 'sync');
    expectError(await api.get('/1.0/profiles/other'), 404);
  });

  test('projects: create with its own default profile; ?project= scopes profiles; unknown project → 404', async () => {
    const c = await api.post('/1.0/projects', { name: 'team', description: 'Team', config: {} });
    assert.equal(c.status, 200, c.text);
    const p = (await api.get('/1.0/projects/team')).json.metadata;
    assert.deepEqual(p.config, { 'features.images': 'true', 'features.profiles': 'true' });
    assert.deepEqual(p.used_by, ['/1.0/profiles/default?project=team']);
    assert.deepEqual((await api.get('/1.0/profiles?project=team')).json.metadata, [
      '/1.0/profiles/default?project=team',
    ]);
    await api.post('/1.0/profiles?project=team', { name: 'only-here' });
    expectError(await api.get('/1.0/profiles/only-here'), 404);
    assert.equal((await api.get('/1.0/profiles/only-here?project=team')).status, 200);
    expectError(await api.get('/1.0/profiles?project=nope'), 404);
    expectError(await api.get('/1.0?project=nope'), 404);
    expectError(await api.post('/1.0/projects', { name: 'team' }), 409);
    expectError(await api.post('/1.0/projects', { name: 'bad', config: { 'features.nope': 'true' } }), 400);
  });

  test('a project without features.profiles uses the default project profiles', async () => {
    assert.equal(
      (await api.post('/1.0/projects', { name: 'shared', config: { 'features.profiles': 'false' } })).status,
      200,
    );
    const names = (await api.get('/1.0/profiles?project=shared')).json.metadata;
    assert.ok(names.includes('/1.0/profiles/frontend?project=shared'));
    assert.deepEqual((await api.get('/1.0/projects/shared')).json.metadata.used_by, []);
  });

  test('project features cannot change while it holds objects; PATCH/PUT with ETag', async () => {
    const cur = await api.get('/1.0/projects/team');
    expectError(await api.patch('/1.0/projects/team', { config: { 'features.profiles': 'false' } }), 400);
    assert.equal(
      (await api.patch('/1.0/projects/team', { description: 'The team' }, { 'If-Match': cur.headers.etag! })).status,
      200,
    );
    expectError(
      await api.put('/1.0/projects/team', { description: 'x', config: {} }, { 'If-Match': cur.headers.etag! }),
      412,
    );
    const now = (await api.get('/1.0/projects/team')).json.metadata;
    assert.equal(now.description, 'The team');
    assert.equal(now.config['features.profiles'], 'true');
  });

  test('project rename/delete: not while holding objects; default → 403; rename answers 204 + Location', async () => {
    expectError(await api.delete('/1.0/projects/team'), 400);
    assert.equal((await api.delete('/1.0/profiles/only-here?project=team')).status, 202);
    const r = await api.post('/1.0/projects/team', { name: 'squad' });
    assert.equal(r.status, 204);
    assert.equal(r.headers.location, '/1.0/projects/squad');
    assert.deepEqual((await api.get('/1.0/profiles?project=squad')).json.metadata, [
      '/1.0/profiles/default?project=squad',
    ]);
    expectError(await api.post('/1.0/projects/squad', { name: 'shared' }), 409);
    expectError(await api.post('/1.0/projects/default', { name: 'x' }), 403);
    expectError(await api.delete('/1.0/projects/default'), 403);
    assert.equal((await api.delete('/1.0/projects/squad')).status, 202);
    assert.equal((await api.delete('/1.0/projects/shared')).status, 202);
    assert.deepEqual((await api.get('/1.0/projects')).json.metadata, ['/1.0/projects/default']);
  });
});

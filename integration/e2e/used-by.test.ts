import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, uploadBusybox, waitOp } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { ensureRootSubids } from '../support/lxc-host.ts';

/**
 * used_by against the daemon with real containers: profiles list the containers (and snapshots) naming
 * them, projects what they hold, pools and volumes what is on them; refusals are clear 400/403s in the
 * error envelope and change nothing.
 */
describe('used_by and in-use refusals, with real containers', () => {
  const tag = randomBytes(3).toString('hex');
  const web = `web-${tag}`;
  const shared = `shared-${tag}`;
  const c1 = `ub1-${tag}`;
  const c2 = `ub2-${tag}`;
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let work: string;
  let fingerprint: string;

  /** What a refusal must leave as it was: the objects it names, bodies and ETags. */
  const state = async () => {
    const paths = [
      `/1.0/profiles/${web}`,
      `/1.0/projects/${shared}`,
      `/1.0/containers/${c1}`,
      `/1.0/containers/${c2}?project=${shared}`,
      '/1.0/storage-pools/default',
      '/1.0/storage-pools/default/volumes/custom/vol',
    ];
    const out: Record<string, unknown> = {};
    for (const p of paths) {
      const r = await api.get(p);
      const { status: _s, status_code: _c, state: _st, last_used_at: _l, ...rest } = r.json.metadata ?? {};
      out[p] = { status: r.status, etag: r.headers.etag, body: rest };
    }
    return out;
  };

  before(async () => {
    await ensureRootSubids();
    work = await mkdtemp(path.join(os.tmpdir(), 'svcd-usedby-'));
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    cli = await lxcCli(d.stateDir);
    ({ fingerprint } = await uploadBusybox(api, work));
    assert.equal((await api.post('/1.0/storage-pools/default/volumes/custom', { name: 'vol' })).status, 200);
    assert.equal(
      (
        await api.post('/1.0/profiles', {
          name: web,
          devices: { data: { type: 'disk', pool: 'default', source: 'vol', path: '/mnt/data' } },
        })
      ).status,
      200,
    );
    // A project sharing the default project's profiles and images.
    assert.equal(
      (
        await api.post('/1.0/projects', {
          name: shared,
          config: { 'features.profiles': 'false', 'features.images': 'false' },
        })
      ).status,
      200,
    );
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: c1,
        profiles: ['default', web],
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(
      api,
      await api.post(`/1.0/containers?project=${shared}`, {
        name: c2,
        profiles: ['default', web],
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(api, await api.post(`/1.0/containers/${c1}/snapshots`, { name: 's0' }));
  });
  after(async () => {
    await cli?.cleanup();
    await api
      ?.delete(`/1.0/containers/${c2}?project=${shared}`)
      .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
      .catch(() => {});
    await api?.delete(`/1.0/projects/${shared}`).catch(() => {});
    await teardownContainers(d, api, [work]);
  });

  test('a profile lists the containers and snapshots naming it, across the projects using it', async () => {
    const p = (await api.get(`/1.0/profiles/${web}`)).json.metadata;
    assert.deepEqual(p.used_by, [
      `/1.0/containers/${c1}`,
      `/1.0/containers/${c1}/snapshots/s0`,
      `/1.0/containers/${c2}?project=${shared}`,
    ]);
    // The same through a list with recursion, and seen from the project that borrows the profile.
    const all = (await api.get('/1.0/profiles?recursion=1')).json.metadata as { name: string; used_by: string[] }[];
    assert.deepEqual(all.find((x) => x.name === web)!.used_by, p.used_by);
    assert.deepEqual(all.find((x) => x.name === 'default')!.used_by, p.used_by);
    assert.deepEqual((await api.get(`/1.0/profiles/${web}?project=${shared}`)).json.metadata.used_by, p.used_by);
  });

  test("deleting a profile in use is refused (400, LXD's message) and nothing changes", async () => {
    const before = await state();
    const msg = expectError(await api.delete(`/1.0/profiles/${web}`), 400);
    assert.match(msg, /^Profile is currently in use by \/1\.0\/containers\//);
    assert.ok(msg.includes(`/1.0/containers/${c2}?project=${shared}`), msg);
    // Nor may an edit leave the containers using it without their root disk (LXD refuses that too).
    const dflt = await api.get('/1.0/profiles/default');
    assert.match(
      expectError(await api.put('/1.0/profiles/default', { description: 'x', config: {}, devices: {} }), 400),
      /^At least one container relies on this profile: \/1\.0\/containers\/.* A container needs a root disk device/,
    );
    assert.match(
      expectError(
        await api.patch('/1.0/profiles/default', { devices: { root: { type: 'disk', path: '/', pool: 'nope' } } }),
        400,
      ),
      /storage pool "nope" does not exist/,
    );
    assert.deepEqual(await api.get('/1.0/profiles/default').then((r) => [r.headers.etag, r.json.metadata]), [
      dflt.headers.etag,
      dflt.json.metadata,
    ]);
    assert.deepEqual(await state(), before);
  });

  test('a container cannot name a missing profile: create and update are refused with 400, nothing is made', async () => {
    const before = await state();
    assert.match(
      expectError(
        await api.post('/1.0/containers', {
          name: `nope-${tag}`,
          profiles: ['default', 'missing'],
          source: { type: 'none' },
        }),
        400,
      ),
      /Profile "missing" does not exist/,
    );
    expectError(await api.get(`/1.0/containers/nope-${tag}`), 404);
    assert.match(
      expectError(await api.patch(`/1.0/containers/${c1}`, { profiles: ['default', 'missing'] }), 400),
      /Profile "missing" does not exist/,
    );
    assert.match(
      expectError(
        await api.put(`/1.0/containers/${c1}`, { profiles: ['default', web, 'missing'], devices: {}, config: {} }),
        400,
      ),
      /missing/,
    );
    assert.deepEqual(await state(), before);
  });

  test('renaming a profile in use: the containers and snapshots naming it follow (as in LXD)', async () => {
    const front = `front-${tag}`;
    assert.equal((await api.post(`/1.0/profiles/${web}`, { name: front })).status, 204);
    assert.deepEqual((await api.get(`/1.0/containers/${c1}`)).json.metadata.profiles, ['default', front]);
    assert.deepEqual((await api.get(`/1.0/containers/${c2}?project=${shared}`)).json.metadata.profiles, [
      'default',
      front,
    ]);
    assert.deepEqual((await api.get(`/1.0/containers/${c1}/snapshots/s0`)).json.metadata.profiles, ['default', front]);
    assert.equal((await api.get(`/1.0/profiles/${front}`)).json.metadata.used_by.length, 3);
    // The expanded devices are unchanged: the volume is still attached through the renamed profile.
    assert.deepEqual((await api.get(`/1.0/containers/${c1}`)).json.metadata.expanded_devices.data, {
      type: 'disk',
      pool: 'default',
      source: 'vol',
      path: '/mnt/data',
    });
    assert.equal((await api.post(`/1.0/profiles/${front}`, { name: web })).status, 204);
    assert.deepEqual((await api.get(`/1.0/containers/${c1}`)).json.metadata.profiles, ['default', web]);
  });

  test('a project lists its containers; deleting it while it holds one is a clear 400, the default project 403', async () => {
    const p = (await api.get(`/1.0/projects/${shared}`)).json.metadata;
    assert.deepEqual(p.used_by, [`/1.0/containers/${c2}?project=${shared}`]);
    const dflt = (await api.get('/1.0/projects/default')).json.metadata.used_by as string[];
    for (const u of [
      `/1.0/containers/${c1}`,
      `/1.0/images/${fingerprint}`,
      '/1.0/profiles/default',
      `/1.0/profiles/${web}`,
      '/1.0/storage-pools/default/volumes/custom/vol',
    ])
      assert.ok(dflt.includes(u), `${u} in ${dflt.join(' ')}`);
    assert.ok(!dflt.some((u) => u.includes(c2)), "the other project's container is not the default project's");
    const before = await state();
    assert.match(
      expectError(await api.delete(`/1.0/projects/${shared}`), 400),
      /^Only empty projects can be removed: .*\/1\.0\/containers\//,
    );
    assert.match(
      expectError(await api.post(`/1.0/projects/${shared}`, { name: `elsewhere-${tag}` }), 400),
      /^Only empty projects can be renamed/,
    );
    assert.match(
      expectError(await api.patch(`/1.0/projects/${shared}`, { config: { 'features.profiles': 'true' } }), 400),
      /empty projects/,
    );
    expectError(await api.delete('/1.0/projects/default'), 403);
    assert.deepEqual(await state(), before);
  });

  test('a pool lists the profiles, containers, images and volumes on it; a custom volume the containers and profiles attaching it', async () => {
    const pool = (await api.get('/1.0/storage-pools/default')).json.metadata.used_by as string[];
    for (const u of [
      '/1.0/profiles/default',
      `/1.0/profiles/${web}`,
      `/1.0/containers/${c1}`,
      `/1.0/containers/${c2}?project=${shared}`,
      `/1.0/images/${fingerprint}`,
      '/1.0/storage-pools/default/volumes/custom/vol',
    ])
      assert.ok(pool.includes(u), `${u} in ${pool.join(' ')}`);
    assert.deepEqual(
      (await api.get('/1.0/storage-pools?recursion=1')).json.metadata.find(
        (p: { name: string }) => p.name === 'default',
      ).used_by,
      pool,
    );
    const vol = (await api.get('/1.0/storage-pools/default/volumes/custom/vol')).json.metadata;
    assert.deepEqual(vol.used_by, [
      `/1.0/containers/${c1}`,
      `/1.0/containers/${c2}?project=${shared}`,
      `/1.0/profiles/${web}`,
    ]);
    const before = await state();
    assert.match(
      expectError(await api.delete('/1.0/storage-pools/default/volumes/custom/vol'), 400),
      /still in use by \/1\.0\/containers\//,
    );
    assert.match(expectError(await api.delete('/1.0/storage-pools/default'), 400), /currently in use/);
    assert.deepEqual(await state(), before);
  });

  test('lxc CLI: profile show lists used_by; profile and project delete fail with the message', async () => {
    const shown = await cli.ok(['profile', 'show', web]);
    assert.match(
      shown,
      new RegExp(
        `used_by:\\n- /1.0/containers/${c1}\\n- /1.0/containers/${c1}/snapshots/s0\\n- /1.0/containers/${c2}\\?project=${shared}`,
      ),
    );
    assert.match(
      await cli.fail(['profile', 'delete', web]),
      /Error: Profile is currently in use by \/1\.0\/containers\//,
    );
    assert.equal((await api.get(`/1.0/profiles/${web}`)).status, 200);
    assert.match(await cli.fail(['project', 'delete', shared]), /Only empty projects can be removed/);
    assert.equal((await api.get(`/1.0/projects/${shared}`)).status, 200);
  });

  test('once nothing uses them, the profile and the project go', async () => {
    await waitOp(api, await api.delete(`/1.0/containers/${c2}?project=${shared}`));
    assert.deepEqual((await api.get(`/1.0/projects/${shared}`)).json.metadata.used_by, []);
    assert.equal((await api.delete(`/1.0/projects/${shared}`)).status, 202);
    expectError(await api.get(`/1.0/projects/${shared}`), 404);
    // c1 and its snapshot still name it.
    expectError(await api.delete(`/1.0/profiles/${web}`), 400);
    const patched = await api.patch(`/1.0/containers/${c1}`, { profiles: ['default'] });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual((await api.get(`/1.0/profiles/${web}`)).json.metadata.used_by, [
      `/1.0/containers/${c1}/snapshots/s0`,
    ]);
    assert.match(expectError(await api.delete(`/1.0/profiles/${web}`), 400), /snapshots\/s0/);
    await waitOp(api, await api.delete(`/1.0/containers/${c1}/snapshots/s0`));
    assert.deepEqual((await api.get(`/1.0/profiles/${web}`)).json.metadata.used_by, []);
    assert.equal((await api.delete(`/1.0/profiles/${web}`)).status, 202);
    assert.deepEqual((await api.get('/1.0/storage-pools/default/volumes/custom/vol')).json.metadata.used_by, []);
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { buildBusyboxImage } from '../support/busybox-image.ts';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';

const run = promisify(execFile);

describe('containers on real LXC (busybox image): create, run, observe, self-heal', () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  let fingerprint: string;
  const state = (name: string) => api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata);

  before(async () => {
    ({
      d,
      api,
      imgDir,
      image: { fingerprint },
    } = await startBusyboxDaemon());
    assert.equal(
      (await api.post('/1.0/storage-pools', { name: 'fast', driver: 'btrfs', config: { size: '512MiB' } })).status,
      200,
    );
  });
  after(async () => teardownContainers(d, api, [imgDir]));

  test('bad input is refused before anything is written', async () => {
    const names = ['1abc', 'a/b', 'a:b', 'a,b', 'a'.repeat(65), 'with space', '-x', 'x-'];
    for (const name of names)
      expectError(await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' } }), 400);
    expectError(
      await api.post('/1.0/containers', { name: 'c', profiles: ['nope'], source: { type: 'image', alias: 'bb' } }),
      400,
    );
    expectError(
      await api.post('/1.0/containers', {
        name: 'c',
        config: { 'limits.bogus': '1' },
        source: { type: 'image', alias: 'bb' },
      }),
      400,
    );
    expectError(
      await api.post('/1.0/containers', {
        name: 'c',
        config: { 'limits.memory': 'lots' },
        source: { type: 'image', alias: 'bb' },
      }),
      400,
    );
    expectError(
      await api.post('/1.0/containers', {
        name: 'c',
        config: { 'volatile.x': '1' },
        source: { type: 'image', alias: 'bb' },
      }),
      400,
    );
    expectError(
      await api.post('/1.0/containers', {
        name: 'c',
        devices: { root: { type: 'disk', path: '/', pool: 'nope' } },
        source: { type: 'image', alias: 'bb' },
      }),
      400,
    );
    expectError(
      await api.post('/1.0/containers', { name: 'c', instance_type: 'huge', source: { type: 'image', alias: 'bb' } }),
      400,
    );
    expectError(await api.post('/1.0/containers', { name: 'c', source: { type: 'image', alias: 'nope' } }), 404);
    expectError(await api.post('/1.0/containers', { name: 'c', source: { type: 'migration' } }), 400);
    assert.deepEqual((await api.get('/1.0/containers')).json.metadata, []);
  });

  test('an unprivileged container on the default dir pool: create (async), start, state from the observers, stop', async () => {
    const op = await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'u1',
        instance_type: 'c1-m0.5',
        source: { type: 'image', alias: 'bb' },
      }),
    );
    assert.deepEqual(op.resources.containers, ['/1.0/containers/u1']);
    const c = (await api.get('/1.0/containers/u1')).json.metadata;
    assert.equal(c.status, 'Stopped');
    assert.equal(c.status_code, 102);
    assert.equal(c.config['limits.memory'], '512MiB');
    // container_image_properties: the image's properties as image.* keys, as LXD sets them at create.
    const img = (await api.get(`/1.0/images/${fingerprint}`)).json.metadata;
    assert.ok(Object.keys(img.properties).length > 0, 'the test image has properties');
    for (const [k, v] of Object.entries(img.properties as Record<string, string>))
      assert.equal(c.config[`image.${k}`], v, `image.${k}`);
    assert.deepEqual(c.expanded_devices.root, { type: 'disk', path: '/', pool: 'default' });
    assert.equal(c.last_used_at, '1970-01-01T00:00:00Z');
    assert.deepEqual((await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata, [
      '/1.0/storage-pools/default/volumes/container/u1',
    ]);

    await waitOp(api, await api.put('/1.0/containers/u1/state', { action: 'start', timeout: -1 }));
    const s = await eventually(async () => {
      const st = await state('u1');
      return st.status === 'Running' && st.pid > 0 ? st : undefined;
    }, 'u1 to be observed running');
    assert.equal(s.status_code, 103);
    assert.ok(s.processes >= 1);
    assert.ok(s.memory.usage > 0);
    assert.ok(s.cpu.usage > 0);
    // Unprivileged: root inside is a high uid outside, and the memory limit is in the cgroup.
    const uidMap = await readFile(`/proc/${s.pid}/uid_map`, 'utf8');
    assert.match(uidMap, /^\s*0\s+1000000\s+65536/);
    assert.notEqual((await api.get('/1.0/containers/u1')).json.metadata.last_used_at, '1970-01-01T00:00:00Z');
    const listed = (await api.get('/1.0/containers?recursion=2')).json.metadata;
    assert.equal(listed[0].state.pid, s.pid);
    assert.deepEqual(
      (
        await api.get(`/1.0/containers?recursion=1&filter=${encodeURIComponent('status eq running')}`)
      ).json.metadata.map((x: { name: string }) => x.name),
      ['u1'],
    );

    expectError(await api.put('/1.0/containers/u1/state', { action: 'stop', stateful: true }), 400);
    // A running container cannot be published.
    expectError(await api.post('/1.0/images', { source: { type: 'container', name: 'u1' } }), 400);
    await waitOp(api, await api.put('/1.0/containers/u1/state', { action: 'stop', force: true }));
    assert.equal((await state('u1')).status, 'Stopped');
  });

  test('publish a stopped container as an image (compression_algorithm, aliases), and launch a container from it', async () => {
    expectError(
      await api.post('/1.0/images', { source: { type: 'container', name: 'u1' }, compression_algorithm: 'rar' }),
      400,
    );
    expectError(await api.post('/1.0/images', { source: { type: 'container', name: 'nope' } }), 404);
    const op = await waitOp(
      api,
      await api.post('/1.0/images', {
        source: { type: 'container', name: 'u1' },
        compression_algorithm: 'xz',
        aliases: [{ name: 'from-u1' }],
        properties: { os: 'busybox-published' },
      }),
    );
    assert.match(op.metadata.fingerprint, /^[0-9a-f]{64}$/);
    const img = (await api.get(`/1.0/images/${op.metadata.fingerprint}`)).json.metadata;
    assert.equal(img.properties.os, 'busybox-published');
    assert.deepEqual(
      img.aliases.map((a: { name: string }) => a.name),
      ['from-u1'],
    );
    const exported = await api.get(`/1.0/images/${op.metadata.fingerprint}/export`);
    assert.equal(exported.status, 200);
    await waitOp(
      api,
      await api.post('/1.0/containers', { name: 'child', source: { type: 'image', alias: 'from-u1' } }),
    );
    await waitOp(api, await api.put('/1.0/containers/child/state', { action: 'start' }));
    await eventually(
      async () => (await state('child')).status === 'Running',
      'the container from the published image to run',
    );
    await waitOp(api, await api.put('/1.0/containers/child/state', { action: 'stop', force: true }));
    await waitOp(api, await api.delete('/1.0/containers/child'));
  });

  test('copy a container (source copy): the copy has the same files and runs on its own', async () => {
    await waitOp(api, await api.post('/1.0/containers', { name: 'u1copy', source: { type: 'copy', source: 'u1' } }));
    await waitOp(api, await api.put('/1.0/containers/u1copy/state', { action: 'start' }));
    const st = await eventually(
      async () => ((await state('u1copy')).pid > 0 ? state('u1copy') : undefined),
      'the copy to run',
    );
    assert.ok((await readFile(`/proc/${st.pid}/root/bin/busybox`)).length > 0);
    await waitOp(api, await api.put('/1.0/containers/u1copy/state', { action: 'stop', force: true }));
    await waitOp(api, await api.delete('/1.0/containers/u1copy'));
    expectError(await api.post('/1.0/containers', { name: 'x', source: { type: 'copy', source: 'nope' } }), 404);
  });

  test("a project without features.profiles: its containers use the default project's profiles, on the host too", async () => {
    assert.equal(
      (
        await api.post('/1.0/projects', {
          name: 'noprof',
          config: { 'features.profiles': 'false', 'features.images': 'false' },
        })
      ).status,
      200,
    );
    const q = '?project=noprof';
    await waitOp(api, await api.post(`/1.0/containers${q}`, { name: 'np1', source: { type: 'image', alias: 'bb' } }));
    await waitOp(api, await api.put(`/1.0/containers/np1/state${q}`, { action: 'start' }));
    const st = await eventually(async () => {
      const s = (await api.get(`/1.0/containers/np1/state${q}`)).json.metadata;
      return s.status === 'Running' && s.pid > 0 ? s : undefined;
    }, 'np1 running');
    assert.ok(st.pid > 0);
    // the root disk came from default/default, and the host config says so
    assert.equal((await api.get(`/1.0/containers/np1${q}`)).json.metadata.expanded_devices.root.pool, 'default');
    await waitOp(api, await api.put(`/1.0/containers/np1/state${q}`, { action: 'stop', force: true }));
    await waitOp(api, await api.delete(`/1.0/containers/np1${q}`));
    assert.equal((await api.delete('/1.0/projects/noprof')).status, 202);
  });

  test('a privileged container on a btrfs pool: a clone of the image volume; freeze, unfreeze, restart', async () => {
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'p1',
        config: { 'security.privileged': 'true', 'limits.memory': '256MiB' },
        devices: { root: { type: 'disk', path: '/', pool: 'fast' } },
        source: { type: 'image', fingerprint },
      }),
    );
    const vols = (await api.get('/1.0/storage-pools/fast/volumes')).json.metadata;
    assert.ok(vols.includes('/1.0/storage-pools/fast/volumes/container/p1'));
    assert.ok(
      vols.includes(`/1.0/storage-pools/fast/volumes/image/${fingerprint}`),
      'the image was unpacked once into an image volume',
    );
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'start' }));
    const pid = (await eventually(async () => ((await state('p1')).pid > 0 ? state('p1') : undefined), 'p1 running'))
      .pid;
    assert.match(await readFile(`/proc/${pid}/uid_map`, 'utf8'), /^\s*0\s+0\s+4294967295/);
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'freeze' }));
    await eventually(async () => (await state('p1')).status === 'Frozen', 'p1 frozen');
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'unfreeze' }));
    await eventually(async () => (await state('p1')).status === 'Running', 'p1 thawed');
    await waitOp(api, await api.put('/1.0/containers/p1/state', { action: 'restart', force: true }));
    const after = await eventually(async () => {
      const st = await state('p1');
      return st.status === 'Running' && st.pid !== pid ? st : undefined;
    }, 'p1 restarted with a new init');
    assert.ok(after.pid > 0);
  });

  test("deleting an image removes its unpacked volumes from every pool (a dir pool's spare copy too); its containers keep running", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-gc-'));
    try {
      const img = await buildBusyboxImage({
        dir,
        format: 'unified',
        compression: 'gzip',
        customizeRootfs: (r) => writeFile(path.join(r, 'etc/marker'), 'gc\n'),
      });
      if (img.format !== 'unified') throw new Error('unexpected image format');
      await waitOp(
        api,
        await api.post('/1.0/images', await readFile(img.file), { 'Content-Type': 'application/octet-stream' }),
      );
      const fp = img.fingerprint;
      const imagesDir = path.join(d.stateDir, 'storage-pools', 'default', 'images');
      const before = new Set(await readdir(imagesDir));
      await waitOp(api, await api.post('/1.0/containers', { name: 'g1', source: { type: 'image', fingerprint: fp } }));
      await waitOp(
        api,
        await api.post('/1.0/containers', {
          name: 'g2',
          devices: { root: { type: 'disk', path: '/', pool: 'fast' } },
          source: { type: 'image', fingerprint: fp },
        }),
      );
      for (const pool of ['default', 'fast'])
        assert.ok(
          (await api.get(`/1.0/storage-pools/${pool}/volumes`)).json.metadata.includes(
            `/1.0/storage-pools/${pool}/volumes/image/${fp}`,
          ),
          pool,
        );
      // On the dir pool: the image volume and, made in the background, its spare copy.
      const added = await eventually(async () => {
        const now = (await readdir(imagesDir)).filter((e) => !before.has(e));
        return now.length === 2 && now.some((e) => e.endsWith('.spare')) ? now : undefined;
      }, 'the image volume and its spare on the dir pool');

      await waitOp(api, await api.delete(`/1.0/images/${fp}`));
      for (const pool of ['default', 'fast']) {
        await eventually(
          async () =>
            !(await api.get(`/1.0/storage-pools/${pool}/volumes`)).json.metadata.includes(
              `/1.0/storage-pools/${pool}/volumes/image/${fp}`,
            ),
          `the image volume gone from ${pool}`,
        );
      }
      await eventually(
        async () => (await readdir(imagesDir)).every((e) => !added.includes(e)),
        'the volume and its spare gone from the disk',
      );
      assert.deepEqual(new Set(await readdir(imagesDir)), before, "the other image's volumes stay");

      // The containers are copies (dir) and snapshots (btrfs) of their own.
      for (const name of ['g1', 'g2']) {
        await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
        const out = await waitOp(
          api,
          await api.post(`/1.0/containers/${name}/exec`, {
            command: ['cat', '/etc/marker'],
            'wait-for-websocket': false,
            'record-output': true,
          }),
        );
        assert.equal((await api.get(out.metadata.output['1'])).text, 'gc\n', name);
        await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'stop', force: true }));
        await waitOp(api, await api.delete(`/1.0/containers/${name}`));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("storage_images_delete: a pool's unpacked copy of an image is deleted; its containers keep working; the next create unpacks it again", async () => {
    const url = (pool: string) => `/1.0/storage-pools/${pool}/volumes/image/${fingerprint}`;
    const imagesDirOf = (pool: string) => path.join(d.stateDir, 'storage-pools', pool, 'images');
    await waitOp(api, await api.post('/1.0/containers', { name: 'iv1', source: { type: 'image', alias: 'bb' } }));
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'iv2',
        devices: { root: { type: 'disk', path: '/', pool: 'fast' } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    const onDisk: Record<string, string[]> = {};
    for (const pool of ['default', 'fast']) {
      assert.equal((await api.get(url(pool))).status, 200, pool);
      onDisk[pool] = (await readdir(imagesDirOf(pool))).filter((e) => !e.includes('.spare'));
      assert.ok(onDisk[pool]!.length > 0, `${pool} holds the image volume`);
      // Another image's volumes may be there too (an earlier test's): only one goes.
    }
    expectError(await api.delete(`/1.0/storage-pools/default/volumes/image/${'0'.repeat(64)}`), 404);
    expectError(await api.delete(`/1.0/storage-pools/nope/volumes/image/${fingerprint}`), 404);
    for (const pool of ['default', 'fast']) {
      const r = await api.delete(url(pool));
      assert.equal(r.status, 200, r.text);
      expectError(await api.get(url(pool)), 404);
      const left = await eventually(
        async () => {
          const now = (await readdir(imagesDirOf(pool))).filter((e) => !e.includes('.spare'));
          return now.length === onDisk[pool]!.length - 1 ? now : undefined;
        },
        `the image volume gone from ${pool}'s disk (was ${onDisk[pool]!.join(' ')})`,
      );
      assert.ok(
        left.every((e) => onDisk[pool]!.includes(e)),
        'nothing else removed or added',
      );
    }
    assert.equal((await api.get(`/1.0/images/${fingerprint}`)).status, 200, 'the image itself stays');
    // The containers are clones of their own: they start and run.
    for (const name of ['iv1', 'iv2']) {
      await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
      await eventually(async () => (await state(name)).status === 'Running', `${name} running`);
    }
    // The next create from the image unpacks it again on that pool.
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'iv3',
        devices: { root: { type: 'disk', path: '/', pool: 'fast' } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    assert.equal((await api.get(url('fast'))).status, 200, 'unpacked again');
    for (const name of ['iv1', 'iv2'])
      await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'stop', force: true }));
    for (const name of ['iv1', 'iv2', 'iv3']) await waitOp(api, await api.delete(`/1.0/containers/${name}`));
  });

  test("self-healing: a container killed behind svcd's back is started again", async () => {
    const before = (await state('p1')).pid;
    await run('lxc-stop', ['-k', '-n', (await idOf('p1'))!, '-P', path.join(d.stateDir, 'containers')]);
    const back = await eventually(
      async () => {
        const st = await state('p1');
        return st.status === 'Running' && st.pid !== before ? st : undefined;
      },
      'p1 to be started again',
      30_000,
    );
    assert.ok(back.pid > 0);
  });

  test('after SIGKILL of svcd, running containers keep running and are observed again', async () => {
    const pid = (await state('p1')).pid;
    await d.kill();
    assert.ok(await readFile(`/proc/${pid}/status`, 'utf8').then(() => true), 'the container survived the daemon');
    await d.restart();
    await eventually(
      async () => (await state('p1')).pid === pid,
      'p1 observed with the same init after the restart',
      20_000,
    );
  });

  test('rename (async) keeps the container; delete (async) removes its volume; protection.delete refuses', async () => {
    const logs = (await api.get('/1.0/containers/u1/logs')).json.metadata as string[];
    assert.ok(logs.includes('/1.0/containers/u1/logs/lxc.log'), `u1 has its LXC log: ${logs}`);
    await waitOp(api, await api.post('/1.0/containers/u1', { name: 'u2' }));
    expectError(await api.get('/1.0/containers/u1'), 404);
    assert.equal((await api.get('/1.0/containers/u2')).json.metadata.name, 'u2');
    // Its logs follow it: listed under the new name, none left under the old one.
    assert.deepEqual(
      (await api.get('/1.0/containers/u2/logs')).json.metadata,
      logs.map((l) => l.replace('/u1/', '/u2/')),
    );
    assert.deepEqual((await api.get('/1.0/containers/u1/logs')).json.metadata, []);
    assert.deepEqual(
      (await readdir(path.join(d.stateDir, 'logs'))).filter((n) => /_u[12]$/.test(n)),
      ['default_u2'],
    );
    expectError(await api.post('/1.0/containers/u2', { name: 'p1' }), 409);
    assert.equal(
      (await api.patch('/1.0/containers/u2', { config: { 'security.protection.delete': 'true' } })).status,
      200,
    );
    expectError(await api.delete('/1.0/containers/u2'), 403);
    assert.equal(
      (await api.patch('/1.0/containers/u2', { config: { 'security.protection.delete': 'false' } })).status,
      200,
    );
    await waitOp(api, await api.delete('/1.0/containers/u2'));
    expectError(await api.get('/1.0/containers/u2'), 404);
    assert.deepEqual((await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata, []);
  });

  test("GET of one container shows every write at once: its own, a profile's, the observer's", async () => {
    assert.equal((await api.post('/1.0/profiles', { name: 'gp', config: { 'user.p': '1' }, devices: {} })).status, 200);
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'g1',
        profiles: ['default', 'gp'],
        source: { type: 'image', alias: 'bb' },
      }),
    );
    const get = () => api.get('/1.0/containers/g1');
    const first = await get();
    assert.equal(first.json.metadata.expanded_config['user.p'], '1');
    assert.equal((await get()).headers.etag, first.headers.etag);
    assert.equal((await api.patch('/1.0/containers/g1', { config: { 'user.c': 'a' } })).status, 200);
    const patched = await get();
    assert.equal(patched.json.metadata.config['user.c'], 'a');
    assert.notEqual(patched.headers.etag, first.headers.etag);
    assert.equal((await api.patch('/1.0/profiles/gp', { config: { 'user.p': '2' } })).status, 200);
    assert.equal((await get()).json.metadata.expanded_config['user.p'], '2');
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'start', timeout: -1 }));
    const running = await eventually(async () => {
      const m = (await get()).json.metadata;
      return m.status === 'Running' ? m : undefined;
    }, 'g1 shown running');
    // What only the observer writes: killed behind svcd's back and started again, g1 shows its new start.
    const { pid } = (await api.get('/1.0/containers/g1/state')).json.metadata;
    await new Promise((r) => setTimeout(r, 1100));
    process.kill(pid, 'SIGKILL');
    await eventually(
      async () => {
        const m = (await get()).json.metadata;
        return m.status === 'Running' && m.last_used_at > running.last_used_at ? true : undefined;
      },
      'g1 shown started again',
      30_000,
    );
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'stop', force: true, timeout: -1 }));
    await waitOp(api, await api.delete('/1.0/containers/g1'));
    expectError(await get(), 404);
    assert.equal((await api.delete('/1.0/profiles/gp')).status, 202); // the spec: sync, HTTP 202
  });

  async function idOf(name: string): Promise<string | undefined> {
    const { stdout } = await run('lxc-ls', ['-P', path.join(d.stateDir, 'containers'), '-f', '-F', 'NAME,STATE']);
    const ids = stdout
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/)[0])
      .filter(Boolean);
    for (const id of ids) {
      const cfg = await readFile(path.join(d.stateDir, 'containers', id!, 'config'), 'utf8');
      if (new RegExp(`^lxc.uts.name = ${name}$`, 'm').test(cfg)) return id;
    }
    return undefined;
  }
});

/**
 * Container lifecycle against the daemon as a process on real LXC (busybox image): ephemeral
 * containers, power-off from inside vs. a kill behind svcd's back, lifecycle events, logs. `after`
 * force-stops and deletes every container (falling back to lxc-stop when the API is gone), ends
 * this state dir's lxc-monitord, unmounts what is left and removes the temp dirs, also on failure.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { lxcIdOf, startBusyboxDaemon, teardownContainers } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { subscribeEvents } from '../support/events.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container lifecycle e2e tests: ${skip}`);

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe('container lifecycle on real LXC: ephemeral, power-off vs kill, events, logs', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  const lxcPath = () => path.join(d.stateDir, 'containers');
  const state = (name: string) => api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata);

  async function waitOp(res: { status: number; json: any; text: string }, want = 'Success') {
    assert.equal(res.status, 202, res.text);
    const done = await api.get(`${res.json.operation}/wait?timeout=120`);
    assert.equal(done.json.metadata.status, want, done.json.metadata.err);
    return done.json.metadata;
  }

  /** The LXC name (the container's id) of `name`, from the rendered config's `lxc.uts.name`. */
  const idOf = (name: string) => lxcIdOf(d.stateDir, name);

  async function launch(name: string, extra: Record<string, unknown> = {}) {
    await waitOp(await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' }, ...extra }));
    await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    const st = await eventually(
      async () => {
        const s = await state(name);
        return s.status === 'Running' && s.pid > 0 ? s : undefined;
      },
      `${name} running`,
      30_000,
    );
    return { id: await idOf(name), pid: st.pid as number };
  }

  /** Power off from inside, as a user in the container would. */
  const powerOffInside = (id: string) =>
    run('lxc-attach', ['-n', id, '-P', lxcPath(), '--', '/bin/busybox', 'poweroff']);

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
  });

  after(async () => teardownContainers(d, api, [imgDir]));

  // First in this suite: the image is not unpacked on the pool yet, so every create wants it at once.
  test('concurrent creates from an image not yet on the pool: one unpack, every rootfs complete, all start', async () => {
    const names = Array.from({ length: 24 }, (_, i) => `race${i}`);
    await Promise.all(names.map((name) => launch(name)));
    for (const name of names) {
      const init = await api.get(`/1.0/containers/${name}/files?path=/sbin/init`);
      assert.equal(init.status, 200, `${name}: ${init.text}`);
    }
    // Unpacked once, before any copy: the image volume is older than every container volume made from it.
    const pool = path.join(d.stateDir, 'storage-pools', 'default');
    // (beside it, the spare copy that the dir driver keeps ready for the next create)
    const images = (await readdir(path.join(pool, 'images'))).filter(
      (n) => !n.endsWith('.spare') && !n.endsWith('.partial'),
    );
    assert.equal(images.length, 1, `one image volume: ${images.join(' ')}`);
    const imageBorn = (await stat(path.join(pool, 'images', images[0]!))).birthtimeMs;
    for (const name of names) {
      const born = (await stat(path.join(pool, 'containers', await idOf(name)))).birthtimeMs;
      assert.ok(
        imageBorn <= born,
        `${name}'s volume (${born}) is older than the image volume (${imageBorn}): the image was unpacked again after it was copied`,
      );
    }
    await Promise.all(
      names.map(async (name) => {
        await waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'stop', force: true }));
        await waitOp(await api.delete(`/1.0/containers/${name}`));
      }),
    );
  });

  test('lifecycle events, each when its effect is observed, in order', async () => {
    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      await waitOp(await api.post('/1.0/containers', { name: 'ev1', source: { type: 'image', alias: 'bb' } }));
      for (const action of ['start', 'freeze', 'unfreeze', 'restart', 'stop'])
        await waitOp(await api.put('/1.0/containers/ev1/state', { action }));
      await waitOp(await api.post('/1.0/containers/ev1', { name: 'ev2' }));
      assert.equal((await api.patch('/1.0/containers/ev2', { config: { 'user.note': 'x' } })).status, 200);
      await waitOp(await api.delete('/1.0/containers/ev2'));
      const want = [
        'container-created /1.0/containers/ev1',
        'container-started /1.0/containers/ev1',
        'container-paused /1.0/containers/ev1',
        'container-resumed /1.0/containers/ev1',
        'container-restarted /1.0/containers/ev1',
        'container-stopped /1.0/containers/ev1',
        'container-renamed /1.0/containers/ev2',
        'container-updated /1.0/containers/ev2',
        'container-deleted /1.0/containers/ev2',
      ];
      const mine = () =>
        sub.events
          .filter((e) => /^\/1\.0\/containers\/ev[12]$/.test(e.metadata.source))
          .map((e) => `${e.metadata.action} ${e.metadata.source}`);
      await eventually(() => mine().length >= want.length, 'nine lifecycle events', 30_000);
      assert.deepEqual(mine(), want);
      const renamed = sub.events.find((e) => e.metadata.action === 'container-renamed');
      assert.deepEqual(renamed.metadata.context, { old_name: 'ev1' });
    } finally {
      sub.close();
    }
  });

  test('an ephemeral container stopped through the API is deleted: container, volume, LXC dir', async () => {
    const { id } = await launch('eph1', { ephemeral: true });
    assert.ok(await exists(path.join(lxcPath(), id)));
    await waitOp(await api.put('/1.0/containers/eph1/state', { action: 'stop' }));
    await eventually(async () => (await api.get('/1.0/containers/eph1')).status === 404, 'eph1 deleted', 30_000);
    expectError(await api.get('/1.0/containers/eph1'), 404);
    await eventually(async () => !(await exists(path.join(lxcPath(), id))), 'the LXC dir of eph1 removed');
    await eventually(
      async () =>
        !(await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata.includes(
          '/1.0/storage-pools/default/volumes/container/eph1',
        ),
      'the volume of eph1 gone',
    );
    // its logs stay
    assert.ok((await api.get('/1.0/containers/eph1/logs')).json.metadata.includes('/1.0/containers/eph1/logs/lxc.log'));
  });

  test('an ephemeral container powered off from inside is deleted', async () => {
    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      const { id } = await launch('eph2', { ephemeral: true });
      await powerOffInside(id);
      await eventually(async () => (await api.get('/1.0/containers/eph2')).status === 404, 'eph2 deleted', 30_000);
      await eventually(async () => !(await exists(path.join(lxcPath(), id))), 'the LXC dir of eph2 removed');
      await eventually(
        async () =>
          !(await api.get('/1.0/storage-pools/default/volumes/container')).json.metadata.includes(
            '/1.0/storage-pools/default/volumes/container/eph2',
          ),
        'the volume of eph2 gone',
      );
      const actions = () =>
        sub.events.filter((e) => e.metadata.source === '/1.0/containers/eph2').map((e) => e.metadata.action);
      await eventually(() => actions().includes('container-deleted'), 'container-deleted for eph2');
      assert.deepEqual(actions(), [
        'container-created',
        'container-started',
        'container-shutdown',
        'container-deleted',
      ]);
    } finally {
      sub.close();
    }
  });

  test("a container killed behind svcd's back is started again", async () => {
    const { id, pid } = await launch('kill1');
    await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath()]);
    const back = await eventually(
      async () => {
        const s = await state('kill1');
        return s.status === 'Running' && s.pid > 0 && s.pid !== pid ? s : undefined;
      },
      'kill1 running again with a new init',
      30_000,
    );
    assert.ok(back.pid > 0);
    assert.match(
      await readFile(path.join(d.stateDir, 'logs', 'default_kill1', 'lxc.log'), 'utf8'),
      new RegExp(`Child <${pid}> ended on signal Killed\\(9\\)`),
    );
  });

  test('a container powered off from inside becomes desired stopped, also across a daemon restart', async () => {
    const { id, pid } = await launch('off1');
    // A canary desired running, started last at the next boot: once it runs, the boot plan is done.
    const canary = await launch('canary', { config: { 'boot.autostart.priority': '-10' } });
    await powerOffInside(id);
    await eventually(async () => (await state('off1')).status === 'Stopped', 'off1 stopped', 30_000);
    assert.match(
      await readFile(path.join(d.stateDir, 'logs', 'default_off1', 'lxc.log'), 'utf8'),
      new RegExp(`Child <${pid}> ended on signal Interrupt\\(2\\)`),
    );
    // the observer's verdict: a power-off, so desired power is now stopped (a desired write for the owner)
    const verdict = await eventually(
      () =>
        d
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l))
          .find((e) => e.msg === 'container powered off from inside' && e.container === 'off1'),
      'the verdict on off1 in the daemon log',
    );
    assert.equal(verdict.desired, 'stopped');
    assert.equal(verdict.cause, 'poweroff');
    await d.stop();
    // While svcd is down the canary dies: the boot plan starts it (last, by its priority).
    await run('lxc-stop', ['-k', '-n', canary.id, '-P', lxcPath()]);
    await d.restart();
    await eventually(
      async () => (await state('canary')).status === 'Running',
      'the canary started by the boot plan',
      60_000,
    );
    assert.equal((await state('off1')).status, 'Stopped');
    const { stdout } = await run('lxc-info', ['-n', id, '-P', lxcPath(), '-s', '-H']);
    assert.equal(stdout.trim(), 'STOPPED');
  });

  test("a deleted container's LXC directory goes through the state dir's trash; what a crash left there goes at the next start", async () => {
    const id = (await launch('trash1')).id;
    await waitOp(await api.put('/1.0/containers/trash1/state', { action: 'stop', force: true }));
    await waitOp(await api.delete('/1.0/containers/trash1'));
    assert.ok(!(await exists(path.join(lxcPath(), id))), 'gone from the lxcpath when the delete ends');
    const trash = path.join(d.stateDir, 'trash');
    await eventually(async () => (await readdir(trash)).length === 0, 'the trash emptied in the background');
    // A crash between the rename and the background removal leaves this: the next start removes it.
    const left = path.join(trash, `${id}.left-by-a-crash`);
    await mkdir(path.join(left, 'rootfs', 'etc'), { recursive: true });
    await writeFile(path.join(left, 'config'), 'lxc.uts.name = trash1\n');
    await d.stop();
    await d.restart();
    await eventually(async () => !(await exists(left)), 'the leftover removed after the restart');
  });

  test('logs: list, get, delete; still there after the container is gone; no way out of the directory', async () => {
    await launch('log1');
    const list = (await api.get('/1.0/containers/log1/logs')).json.metadata as string[];
    assert.ok(list.includes('/1.0/containers/log1/logs/lxc.log'), JSON.stringify(list));
    assert.ok(list.includes('/1.0/containers/log1/logs/console.log'), JSON.stringify(list));
    const lxcLog = await api.get('/1.0/containers/log1/logs/lxc.log');
    assert.equal(lxcLog.status, 200);
    assert.equal(lxcLog.headers['content-type'], 'application/octet-stream');
    assert.match(lxcLog.text, /Started "\/sbin\/init" with pid/);
    expectError(await api.delete('/1.0/containers/log1/logs/lxc.log'), 400);
    assert.equal((await api.delete('/1.0/containers/log1/logs/console.log')).status, 200);
    assert.ok(
      !(await api.get('/1.0/containers/log1/logs')).json.metadata.includes('/1.0/containers/log1/logs/console.log'),
    );
    expectError(await api.get('/1.0/containers/log1/logs/console.log'), 404);
    expectError(await api.delete('/1.0/containers/log1/logs/console.log'), 404);

    await waitOp(await api.put('/1.0/containers/log1/state', { action: 'stop', force: true }));
    await waitOp(await api.delete('/1.0/containers/log1'));
    assert.deepEqual((await api.get('/1.0/containers/log1/logs')).json.metadata, ['/1.0/containers/log1/logs/lxc.log']);
    assert.match((await api.get('/1.0/containers/log1/logs/lxc.log')).text, /Started "\/sbin\/init"/);
    assert.equal((await api.delete('/1.0/containers/log1/logs/lxc.log')).status, 200);
    assert.deepEqual((await api.get('/1.0/containers/log1/logs')).json.metadata, []);

    // never existed: an empty list, and nothing is created for it
    assert.deepEqual((await api.get('/1.0/containers/never1/logs')).json.metadata, []);
    assert.ok(!(await exists(path.join(d.stateDir, 'logs', 'default_never1'))));
    expectError(await api.get('/1.0/containers/never1/logs/lxc.log'), 404);

    // escapes: encoded slashes and dots in the file or the container name, a planted symlink, a symlinked directory
    const shadow = await readFile('/etc/shadow', 'utf8');
    const logDir = path.join(d.stateDir, 'logs', 'default_kill1');
    await symlink('/etc/shadow', path.join(logDir, 'leak.log'));
    await symlink('/etc', path.join(d.stateDir, 'logs', 'default_evil'));
    const attempts = [
      ['GET', '/1.0/containers/kill1/logs/..%2f..%2f..%2f..%2fetc%2fshadow', 400],
      // `..` spelled out is matched by no route at all
      ['GET', '/1.0/containers/kill1/logs/%2e%2e', 404],
      ['GET', '/1.0/containers/kill1/logs/.hidden', 400],
      ['GET', '/1.0/containers/..%2f..%2f..%2fetc/logs', 400],
      ['GET', '/1.0/containers/..%2f..%2f..%2fetc/logs/shadow', 400],
      ['GET', '/1.0/containers/kill1/logs/leak.log', 404],
      ['GET', '/1.0/containers/evil/logs/shadow', 404],
      ['DELETE', '/1.0/containers/kill1/logs/leak.log', 404],
      ['DELETE', '/1.0/containers/kill1/logs/..%2f..%2fcontainers', 400],
      ['DELETE', '/1.0/containers/evil/logs/shadow', 404],
    ] as const;
    for (const [method, url, status] of attempts) {
      const res = await api.request(method, url);
      expectError(res, status);
      assert.ok(!res.text.includes('root:'), `${method} ${url} leaked /etc/shadow`);
    }
    assert.ok(!(await api.get('/1.0/containers/kill1/logs')).json.metadata.some((u: string) => u.includes('leak')));
    assert.deepEqual((await api.get('/1.0/containers/evil/logs')).json.metadata, []);
    assert.equal(await readFile('/etc/shadow', 'utf8'), shadow);
    assert.ok(await exists(path.join(logDir, 'leak.log')));
  });
});

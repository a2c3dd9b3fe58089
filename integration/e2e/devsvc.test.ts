/**
 * devsvc, the guest-facing socket, against the daemon as a process on real LXC (busybox image).
 * The guest's view is tested through the container's own mount namespace: the socket is reached at
 * `/proc/<init pid>/root/dev/lxd/sock` (the path as the container sees it), also by a process
 * running as the host uid of an unprivileged container's root, and `lxc-attach` shows the socket
 * inside. `after` force-stops and deletes every container and removes the temp dirs, also on failure.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { lxcIdOf, startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { subscribeEvents } from '../support/events.ts';
import { client, eventually, expectError, request, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping devsvc e2e tests: ${skip}`);

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );
/** The host uid/gid of an unprivileged container's root (the test subid range starts there). */
const CONTAINER_ROOT = 1000000;

describe('devsvc: the guest-facing socket on real LXC', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  let image: { fingerprint: string; file: string };
  const pids = new Map<string, number>();

  /** The guest's socket, reached through the container's own mount namespace. */
  const guestSock = (name: string, dir = 'lxd') => `/proc/${pids.get(name)}/root/dev/${dir}/sock`;
  const guest = (name: string, dir = 'lxd') => client({ socketPath: guestSock(name, dir) });
  const hostSock = async (name: string) => path.join(d.stateDir, 'devsvc', await lxcIdOf(d.stateDir, name), 'sock');
  const attach = async (name: string, ...cmd: string[]) =>
    (
      await run('lxc-attach', [
        '-n',
        await lxcIdOf(d.stateDir, name),
        '-P',
        path.join(d.stateDir, 'containers'),
        '--clear-env',
        '--',
        '/bin/busybox',
        ...cmd,
      ])
    ).stdout;

  /** Start (unless `alreadyAsked`: a restart was sent, and a start of a running container is refused) and wait until it runs. */
  async function startAndWait(name: string, alreadyAsked = false) {
    if (!alreadyAsked) await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    const st = await eventually(
      async () => {
        const s = (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
        return s.status === 'Running' && s.pid > 0 ? s : undefined;
      },
      `${name} running`,
      30_000,
    );
    pids.set(name, st.pid as number);
  }

  /** PATCH is sync: the desired write is done when it answers (convergence follows). */
  async function patch(url: string, body: unknown) {
    const res = await api.patch(url, body);
    assert.equal(res.status, 200, res.text);
  }

  async function launch(name: string, config: Record<string, string>) {
    await waitOp(api, await api.post('/1.0/containers', { name, config, source: { type: 'image', alias: 'bb' } }));
    await startAndWait(name);
  }

  before(async () => {
    ({ d, api, imgDir, image: image } = await startBusyboxDaemon());
    await launch('g1', {
      'user.foo': 'bar',
      'user.meta-data': 'foo: bar',
      'limits.processes': '200',
      'environment.SECRET': 'x',
    });
    await launch('g2', { 'user.foo': 'other', 'security.privileged': 'true' });
  });

  after(async () => teardownContainers(d, api, [imgDir]));

  test('GET / and /1.0; the socket is inside at /dev/lxd/sock and /dev/svc/sock, privileged or not', async () => {
    for (const name of ['g1', 'g2']) {
      for (const dir of ['lxd', 'svc']) {
        const root = await guest(name, dir).get('/');
        assert.equal(root.status, 200, root.text);
        assert.deepEqual(root.json, ['/1.0']);
      }
      const info = await guest(name).get('/1.0');
      assert.equal(info.status, 200, info.text);
      assert.match(String(info.headers['content-type']), /application\/json/);
      const server = (await api.get('/1.0')).json.metadata;
      assert.deepEqual(info.json, {
        api_version: '1.0',
        location: server.environment.server_name,
        instance_type: 'container',
        state: 'Started',
      });
      for (const ext of ['restrict_devsvc', 'devsvc_events', 'devsvc_images'])
        assert.ok(server.api_extensions.includes(ext), ext);
      // As the container's processes see it: a socket (s), world-connectable, in a read-only mount.
      const ls = await attach(name, 'ls', '-l', '/dev/lxd/sock', '/dev/svc/sock');
      assert.match(ls, /^srw-rw-rw-.*\/dev\/lxd\/sock$/m, ls);
      assert.match(ls, /^srw-rw-rw-.*\/dev\/svc\/sock$/m, ls);
      await assert.rejects(attach(name, 'touch', '/dev/lxd/x'), 'the guest cannot write into the socket directory');
    }
  });

  test("an unprivileged container's root can connect: a process in its user namespace, through its mount namespace", async () => {
    const script = `require('http').get({ socketPath: process.argv[1], path: '/1.0/config/user.foo' }, (r) => { let b = ''; r.on('data', (c) => (b += c)); r.on('end', () => console.log(process.getuid(), r.statusCode, b)); }).on('error', (e) => { console.error(e.message); process.exit(1); });`;
    // Root of the container's user namespace (host uid 1000000, no privilege on the host), running the host's node.
    const { stdout } = await run('nsenter', [
      '-t',
      String(pids.get('g1')),
      '-U',
      '-S',
      '0',
      '-G',
      '0',
      '--',
      process.execPath,
      '-e',
      script,
      guestSock('g1'),
    ]);
    assert.equal(stdout.trim(), '0 200 bar');
    // The host-side path, as the container root's host uid: the directory and socket modes let it in.
    const host = await run('setpriv', [
      `--reuid=${CONTAINER_ROOT}`,
      `--regid=${CONTAINER_ROOT}`,
      '--clear-groups',
      process.execPath,
      '-e',
      script,
      await hostSock('g1'),
    ]);
    assert.equal(host.stdout.trim(), `${CONTAINER_ROOT} 200 bar`);
  });

  test('config: only user.* keys, a value as plain text, others refused; meta-data; devices; PATCH state', async () => {
    const g = guest('g1');
    const list = await g.get('/1.0/config');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json, ['/1.0/config/user.foo', '/1.0/config/user.meta-data']);
    const v = await g.get('/1.0/config/user.foo');
    assert.equal(v.status, 200);
    assert.equal(v.text, 'bar');
    for (const key of ['environment.SECRET', 'limits.processes', 'volatile.base_image', 'security.devsvc'])
      assert.equal((await g.get(`/1.0/config/${key}`)).status, 403, key);
    const missing = await g.get('/1.0/config/user.nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.text, 'not found');
    const meta = await g.get('/1.0/meta-data');
    assert.equal(meta.status, 200);
    assert.equal(meta.text, '#cloud-config\ninstance-id: g1\nlocal-hostname: g1\nfoo: bar\n');
    const devices = await g.get('/1.0/devices');
    assert.equal(devices.status, 200);
    assert.deepEqual(devices.json, (await api.get('/1.0/containers/g1')).json.metadata.expanded_devices);
    assert.equal(devices.json.root.path, '/');
    assert.equal((await g.get('/1.0/nope')).status, 404);
    // The guest tells it is ready (as LXD's agent does); only its own state changes.
    assert.equal((await g.patch('/1.0', { state: 'Ready' })).status, 200);
    assert.equal((await g.get('/1.0')).json.state, 'Ready');
    assert.equal((await guest('g2').get('/1.0')).json.state, 'Started');
    assert.equal((await g.patch('/1.0', { state: 'Bogus' })).status, 400);
    assert.equal((await g.patch('/1.0', 'not json')).status, 400);
    assert.equal((await g.get('/1.0/events')).status, 400, 'events need a websocket');
  });

  test("each container's socket answers for that container only", async () => {
    assert.equal((await guest('g1').get('/1.0/config/user.foo')).text, 'bar');
    assert.equal((await guest('g2').get('/1.0/config/user.foo')).text, 'other');
    assert.match((await guest('g2').get('/1.0/meta-data')).text, /^instance-id: g2$/m);
    assert.deepEqual((await guest('g2').get('/1.0/config')).json, ['/1.0/config/user.foo']);
  });

  test('config and device changes: shown live, and told on the events websocket (type filter)', async () => {
    const all = await subscribeEvents(guestSock('g1'));
    const devOnly = await subscribeEvents(guestSock('g1'), '?type=device');
    const other = await subscribeEvents(guestSock('g2'));
    // A host directory the unprivileged container's root can reach (removed with imgDir in `after`).
    const share = path.join(imgDir, 'share');
    await mkdir(share, { mode: 0o755 });
    await chmod(imgDir, 0o755);
    try {
      await patch('/1.0/containers/g1', {
        config: { 'user.foo': 'baz', 'user.added': 'new', 'limits.processes': '300' },
      });
      assert.equal((await guest('g1').get('/1.0/config/user.foo')).text, 'baz');
      assert.equal((await guest('g1').get('/1.0/config/user.added')).text, 'new');
      const configEvents = () => all.events.filter((e) => e.type === 'config');
      await eventually(() => configEvents().length >= 2, 'two config events');
      assert.deepEqual(
        configEvents().map((e) => e.metadata),
        [
          { key: 'user.added', old_value: '', value: 'new' },
          { key: 'user.foo', old_value: 'bar', value: 'baz' },
        ],
      );
      assert.ok(!Number.isNaN(Date.parse(configEvents()[0].timestamp)));

      await patch('/1.0/containers/g1', { devices: { share: { type: 'disk', source: share, path: '/mnt/share' } } });
      await eventually(() => all.events.some((e) => e.type === 'device'), 'a device event');
      assert.deepEqual(all.events.find((e) => e.type === 'device').metadata, {
        action: 'added',
        name: 'share',
        config: { type: 'disk', source: share, path: '/mnt/share' },
      });
      assert.deepEqual(
        devOnly.events.map((e) => e.type),
        ['device'],
      );

      // A profile change reaches the containers using it.
      const profile = (await api.get('/1.0/profiles/default')).json.metadata;
      await api.patch('/1.0/profiles/default', { config: { ...profile.config, 'user.fromprofile': '1' } });
      await eventually(
        () => all.events.some((e) => e.metadata.key === 'user.fromprofile'),
        'a config event from the profile',
      );
      await eventually(
        () => other.events.some((e) => e.metadata.key === 'user.fromprofile'),
        'the profile event in the other container too',
      );
      assert.equal((await guest('g2').get('/1.0/config/user.fromprofile')).text, '1');
      assert.ok(
        !other.events.some((e) => e.metadata.key === 'user.foo' || e.metadata.name === 'share'),
        'g2 hears nothing of g1',
      );
      assert.equal((await api.put('/1.0/profiles/default', { ...profile })).status, 200);
    } finally {
      for (const s of [all, devOnly, other]) s.close();
    }
    const bad = await request({ socketPath: guestSock('g1') }, 'GET', '/1.0/events?type=lifecycle', undefined, {
      Connection: 'Upgrade',
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /Unknown event type "lifecycle"/);
  });

  test('image export: 403 without security.devsvc.images, a private image is not found, a public one is the image file', async () => {
    const g = guest('g1');
    const url = `/1.0/images/${image.fingerprint}/export`;
    assert.equal((await g.get(url)).status, 403);
    const bad = await api.patch('/1.0/containers/g1', { config: { 'security.devsvc.images': 'maybe' } });
    assert.match(expectError(bad, 400), /security\.devsvc\.images/);
    await patch('/1.0/containers/g1', { config: { 'security.devsvc.images': 'true' } });
    assert.equal((await g.get(url)).status, 404, 'private images stay hidden');
    assert.equal((await api.patch(`/1.0/images/${image.fingerprint}`, { public: true })).status, 200);
    const res = await new Promise<Buffer>((resolve, reject) => {
      import('node:http').then(({ default: http }) =>
        http
          .get({ socketPath: guestSock('g1'), path: url }, (r) => {
            const chunks: Buffer[] = [];
            r.on('data', (c: Buffer) => chunks.push(c));
            r.on('end', () =>
              r.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`HTTP ${r.statusCode}`)),
            );
          })
          .on('error', reject),
      );
    });
    assert.ok(res.equals(await readFile(image.file)), 'the exported bytes are the image file');
    assert.equal((await guest('g2').get(url)).status, 403, 'g2 has no security.devsvc.images');
    assert.equal((await g.get('/1.0/images/zz/export')).status, 404);
  });

  test('the socket survives a daemon restart (re-created in the same mounted directory)', async () => {
    await d.stop();
    await assert.rejects(guest('g1').get('/1.0'), 'no listener while the daemon is down');
    await d.restart();
    await eventually(
      async () => (await guest('g1').get('/1.0/config/user.foo')).text === 'baz',
      'g1 answers again',
      30_000,
    );
    assert.equal((await guest('g2').get('/1.0/config/user.foo')).text, 'other');
  });

  test('security.devsvc=false: closed live, no mount after a restart; stop closes, delete removes the directory', async () => {
    await patch('/1.0/containers/g2', { config: { 'security.devsvc': 'false' } });
    // Refused from the moment the desired write is done (403), and the socket is closed once converged
    // (a reconcile quicker than this request leaves no socket to answer: the connection fails).
    const first = await guest('g2')
      .get('/1.0')
      .then(
        (r) => r.status,
        (e: NodeJS.ErrnoException) => e.code ?? String(e),
      );
    assert.ok(
      first === 403 || ['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ENOENT'].includes(String(first)),
      `devsvc still answering after security.devsvc=false: ${first}`,
    );
    await eventually(
      () =>
        guest('g2')
          .get('/1.0')
          .then(
            () => false,
            () => true,
          ),
      "g2's socket closed",
    );
    const g2Dir = path.dirname(await hostSock('g2'));
    await waitOp(api, await api.put('/1.0/containers/g2/state', { action: 'restart', force: true }));
    await startAndWait('g2', true);
    assert.equal(await exists(path.join(`/proc/${pids.get('g2')}/root/dev/lxd`)), false, 'no /dev/lxd inside');
    assert.equal(await exists(path.join(`/proc/${pids.get('g2')}/root/dev/svc`)), false, 'no /dev/svc inside');
    assert.equal(await exists(path.join(g2Dir, 'sock')), false);

    await launch('g3', { 'security.devsvc': 'false' });
    assert.equal(await exists(`/proc/${pids.get('g3')}/root/dev/lxd`), false);
    assert.doesNotMatch(
      await readFile(path.join(d.stateDir, 'containers', await lxcIdOf(d.stateDir, 'g3'), 'config'), 'utf8'),
      /devsvc/,
    );

    const g1Sock = await hostSock('g1');
    await waitOp(api, await api.put('/1.0/containers/g1/state', { action: 'stop', force: true }));
    assert.equal(await exists(g1Sock), false, 'stopped: no socket');
    await waitOp(api, await api.delete('/1.0/containers/g1'));
    assert.equal(await exists(path.dirname(g1Sock)), false, 'deleted: no directory');
  });
});

/**
 * Containers launched from images of other servers, with two svcd daemons on loopback
 * (support/two-hosts.ts) and the simplestreams test server: a launch from svc (the image pulled as
 * a cached, auto_update image, then the container started), 12 concurrent creates of a remote image
 * not cached yet (one export served by the source, counted from its image-retrieved events), the
 * periodic refresh (images.auto_update_interval as a fraction of an hour), cache expiry
 * (images.remote_cache_expiry as a fraction of a day: 0.0001 days = 8.6 s; the image cache
 * observer looks every 10 s), and a launch from simplestreams.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { teardownContainers, waitOp } from '../support/container-env.ts';
import { eventually } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';
import { startSimplestreamsServer, type SimplestreamsServer } from '../support/simplestreams-server.ts';
import { importTestImage, startSourceAndTarget, stopHosts, type Host } from '../support/two-hosts.ts';

const skip = await lxcSkipReason();

describe('launching containers from remote images', { skip }, () => {
  let a: Host;
  let b: Host;
  let ss: SimplestreamsServer | undefined;
  let fp = '';
  const dirs: string[] = [];
  let exports: () => number;
  let closeEvents = () => {};
  const create = (name: string, src: Record<string, unknown> = {}) =>
    a.api.post('/1.0/containers', {
      name,
      source: { type: 'image', mode: 'pull', server: b.url, protocol: 'lxd', alias: 'bb', certificate: b.cert, ...src },
    });
  const images = async () => (await a.api.get('/1.0/images?recursion=1')).json.metadata as any[];

  before(async () => {
    await ensureRootSubids();
    ({
      a,
      b,
      exports,
      closeEvents,
      image: { dir: dirs[0], fingerprint: fp },
    } = await startSourceAndTarget());
  });
  after(async () => {
    closeEvents();
    await ss?.close();
    await teardownContainers(a?.daemon, a?.api);
    await stopHosts([a, b], dirs);
  });

  test('a launch from svc: the image is pulled as a cached auto_update image, the container created and started', async () => {
    const op = await waitOp(a.api, await create('c1'));
    assert.deepEqual(op.resources.containers, ['/1.0/containers/c1']);
    const img = (await a.api.get(`/1.0/images/${fp}`)).json.metadata;
    assert.equal(img.cached, true);
    assert.equal(img.auto_update, true);
    assert.notEqual(img.last_used_at, '1970-01-01T00:00:00Z');
    assert.equal((await a.api.get('/1.0/containers/c1')).json.metadata.config['volatile.base_image'] ?? fp, fp);
    await waitOp(a.api, await a.api.put('/1.0/containers/c1/state', { action: 'start' }));
    assert.equal((await a.api.get('/1.0/containers/c1/state')).json.metadata.status, 'Running');
    await waitOp(a.api, await a.api.put('/1.0/containers/c1/state', { action: 'stop', force: true }));
    // A name in use is refused before anything is pulled.
    assert.equal((await create('c1')).status, 409);
  });

  test('12 concurrent creates of an image not cached yet: one download, every create succeeds', async () => {
    await waitOp(a.api, await a.api.delete(`/1.0/images/${fp}`));
    const before = exports();
    const names = Array.from({ length: 12 }, (_, i) => `con${i}`);
    const answers = await Promise.all(names.map((n) => create(n)));
    const ops = await Promise.all(answers.map((r) => waitOp(a.api, r)));
    assert.equal(ops.length, 12);
    assert.equal(exports() - before, 1, 'the source served one export');
    assert.deepEqual(
      (await images()).map((i) => i.fingerprint),
      [fp],
    );
    for (const n of names) await waitOp(a.api, await a.api.delete(`/1.0/containers/${n}`));
  });

  test('images.auto_update_interval: the cached image follows the source alias, the old one goes', async () => {
    const next = await importTestImage(b, { public: true, creationDate: 1_600_000_000 });
    dirs.push(next.dir);
    assert.equal(
      (await b.api.put('/1.0/images/aliases/bb', { target: next.fingerprint, description: '' })).status,
      200,
    );
    assert.equal((await a.api.patch('/1.0', { config: { 'images.auto_update_interval': '0.001' } })).status, 200);
    await eventually(
      async () => (await images()).map((i) => i.fingerprint).join() === next.fingerprint,
      'the refreshed image alone',
      60_000,
    );
    const img = (await a.api.get(`/1.0/images/${next.fingerprint}`)).json.metadata;
    assert.equal(img.cached, true);
    assert.equal((await a.api.patch('/1.0', { config: { 'images.auto_update_interval': '0' } })).status, 200);
    assert.equal((await b.api.put('/1.0/images/aliases/bb', { target: fp, description: '' })).status, 200);
  });

  test('images.remote_cache_expiry: a cached image unused that long goes; the container stays', async () => {
    assert.equal((await a.api.patch('/1.0', { config: { 'images.remote_cache_expiry': 'soon' } })).status, 400);
    assert.ok((await images()).some((i) => i.cached));
    assert.equal((await a.api.patch('/1.0', { config: { 'images.remote_cache_expiry': '0.0001' } })).status, 200);
    await eventually(async () => (await images()).length === 0, 'the cached image expired', 60_000);
    assert.equal((await a.api.get('/1.0/containers/c1')).status, 200);
    assert.equal((await a.api.patch('/1.0', { config: { 'images.remote_cache_expiry': '10' } })).status, 200);
  });

  test('a launch from simplestreams', async () => {
    ss = await startSimplestreamsServer({ kinds: ['unified'] });
    const op = await waitOp(
      a.api,
      await create('from-ss', {
        protocol: 'simplestreams',
        server: ss.url,
        alias: ss.aliases[0],
        certificate: ss.certificate,
      }),
    );
    assert.equal(op.status, 'Success');
    const img = (await images()).find((i) => i.update_source?.protocol === 'simplestreams');
    assert.ok(img, 'the simplestreams image is cached');
    assert.equal(img.update_source.server, ss.url);
    assert.equal(img.cached, true);
    await waitOp(a.api, await a.api.delete('/1.0/containers/from-ss'));
  });
});

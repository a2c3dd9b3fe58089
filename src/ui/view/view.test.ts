import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareContainer } from './compare.ts';
import { containersOfEvent, cpuPercent, formatBytes, imageOf, ipv4Of } from './format.ts';
import { hashOf, parseHash, projectOfUrl, withProject } from './location.ts';
import { mergeOperations } from './operations.ts';

test('numbers, addresses and images as the table writes them', () => {
  assert.equal(formatBytes(0), '–');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(3 * 1024 * 1024 + 200 * 1024), '3.2 MiB');
  assert.equal(cpuPercent(undefined, { usageNs: 1, atMs: 1 }), undefined);
  assert.equal(cpuPercent({ usageNs: 0, atMs: 0 }, { usageNs: 500e6, atMs: 1000 }), 50);
  assert.deepEqual(
    ipv4Of({
      lo: { addresses: [{ family: 'inet', address: '127.0.0.1', scope: 'local' }] },
      eth0: {
        addresses: [
          { family: 'inet', address: '10.1.2.3', scope: 'global' },
          { family: 'inet6', address: 'fe80::1', scope: 'link' },
        ],
      },
    }),
    ['10.1.2.3 (eth0)'],
  );
  assert.equal(imageOf({ 'image.description': 'busybox test' }), 'busybox test');
  assert.equal(imageOf({ 'volatile.base_image': 'abcdef0123456789' }), 'abcdef012345');
  assert.equal(imageOf({}), '–');
});

test('the containers an event is about', () => {
  assert.deepEqual(
    containersOfEvent({
      type: 'lifecycle',
      metadata: { source: '/1.0/containers/c%201', action: 'container-started' },
    }),
    ['c 1'],
  );
  assert.deepEqual(
    containersOfEvent({
      type: 'operation',
      metadata: { resources: { containers: ['/1.0/containers/a', '/1.0/containers/b'] } },
    }),
    ['a', 'b'],
  );
  assert.deepEqual(containersOfEvent({ type: 'lifecycle', metadata: { source: '/1.0/networks/n' } }), []);
});

test('desired against observed marks what differs', () => {
  const rows = compareContainer({
    desiredPower: 'running',
    status: 'Stopped',
    generation: 3,
    observedGeneration: 2,
    error: 'boom',
    expandedConfig: { 'limits.memory': '64MiB', 'limits.cpu': '1', 'volatile.x': 'y' },
    expandedDevices: { eth0: { type: 'nic', network: 'br' }, root: { type: 'disk', path: '/', pool: 'p' } },
    pendingRestart: ['limits.cpu'],
    network: undefined,
  });
  const by = Object.fromEntries(rows.map((r) => [r.what, r]));
  assert.deepEqual(by['power state'], { what: 'power state', desired: 'Running', observed: 'Stopped', differs: true });
  assert.equal(by.generation!.differs, true);
  assert.equal(by.reconciler!.differs, true);
  assert.equal(by['limits.cpu']!.differs, true);
  assert.equal(by['limits.memory']!.differs, false);
  assert.equal(by['volatile.x'], undefined);
  assert.equal(by['nic eth0']!.differs, false, 'a stopped container has no nic to miss');
  const running = compareContainer({
    desiredPower: 'running',
    status: 'Running',
    generation: 3,
    observedGeneration: 3,
    error: '',
    expandedConfig: {},
    expandedDevices: { eth0: { type: 'nic', network: 'br' } },
    pendingRestart: [],
    network: {},
  });
  assert.deepEqual(
    running.filter((r) => r.differs).map((r) => r.what),
    ['nic eth0'],
  );
});

test('the page and the project in the hash, and API paths in a project', () => {
  assert.deepEqual(parseHash(''), { page: 'containers', project: 'default' });
  assert.deepEqual(parseHash('#/networks'), { page: 'networks', project: 'default' });
  assert.deepEqual(parseHash('#/images?project=dev'), { page: 'images', project: 'dev' });
  assert.deepEqual(parseHash('#/containers/a%20b?project=p%2F1'), { page: 'container', name: 'a b', project: 'p/1' });
  assert.deepEqual(parseHash('#/containers/%E0%A4'), { page: 'container', name: '%E0%A4', project: 'default' });
  assert.deepEqual(parseHash('#/?project='), { page: 'containers', project: 'default' });
  assert.equal(hashOf({ page: 'images', project: 'default' }), '#/images');
  assert.equal(hashOf({ page: 'container', name: 'a b', project: 'p/1' }), '#/containers/a%20b?project=p%2F1');
  for (const r of [
    { page: 'profiles', project: 'dev' },
    { page: 'container', name: 'web?x', project: 'a&b' },
  ])
    assert.deepEqual(parseHash(hashOf(r)), r, 'a hash reads back as its route');
  assert.equal(withProject('/1.0/images?recursion=1', 'default'), '/1.0/images?recursion=1');
  assert.equal(withProject('/1.0/images?recursion=1', 'dev'), '/1.0/images?recursion=1&project=dev');
  assert.equal(withProject('/ui/api/operations', 'a&b'), '/ui/api/operations?project=a%26b');
  assert.equal(projectOfUrl('/1.0/projects/a%26b'), 'a&b');
});

test("operations: one entry each, the latest update's state, newest first", () => {
  const op = (id: string, created: number, updated: number, status: string) => ({
    id,
    created_at: new Date(created * 1000).toISOString(),
    updated_at: new Date(updated * 1000).toISOString(),
    status,
  });
  const listed = [op('b', 2, 2, 'Running'), op('a', 1, 5, 'Failure')];
  const seen = [op('b', 2, 3, 'Success'), op('a', 1, 4, 'Running'), op('c', 3, 3, 'Running')];
  assert.deepEqual(
    mergeOperations(listed, seen).map((o) => `${o.id} ${o.status}`),
    ['c Running', 'b Success', 'a Failure'],
  );
  assert.equal(mergeOperations([op('x', 1, 1, 'Running')], [op('x', 1, 1, 'Success')])[0]!.status, 'Running');
});

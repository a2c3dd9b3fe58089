import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computePlan, renderPlan } from './compute-plan.ts';
import type { HostDoc } from './document.ts';
import type { HostState } from './host-state.ts';

/** A server as read back: the default objects, a bridge with its `auto` subnets resolved, two containers. */
const host = (): HostState => ({
  server: 'svcd',
  config: { 'core.https_address': ':8443', 'core.trust_password': true },
  projects: [{ name: 'default', description: '', config: { 'features.images': 'true' } }],
  storage_pools: [
    { name: 'default', driver: 'dir', description: '', config: { source: '/var/lib/svcd/pools/default' } },
  ],
  networks: [
    { name: 'eth0', type: 'physical', managed: false, description: '', config: {} },
    {
      name: 'br0',
      type: 'bridge',
      managed: true,
      description: '',
      config: {
        'ipv4.address': '10.4.5.1/24',
        'ipv4.nat': 'true',
        'ipv6.address': 'fd42:1:2:3::1/64',
        'ipv6.nat': 'true',
      },
    },
    { name: 'old', type: 'bridge', managed: true, description: '', config: {} },
  ],
  storage_volumes: [{ pool: 'default', name: 'data', description: '', config: {} }],
  profiles: [
    { name: 'default', description: '', config: {}, devices: { root: { type: 'disk', path: '/', pool: 'default' } } },
    { name: 'web', description: '', config: { 'limits.cpu': '1' }, devices: {} },
  ],
  containers: [
    {
      name: 'c1',
      status: 'Running',
      architecture: 'x86_64',
      description: '',
      profiles: ['default', 'web'],
      config: { 'image.os': 'busybox', 'volatile.eth0.hwaddr': '00:16:3e:00:00:01', 'limits.memory': '128MiB' },
      devices: {},
      ephemeral: false,
    },
    {
      name: 'c9',
      status: 'Running',
      description: '',
      profiles: ['default'],
      config: {},
      devices: {},
      ephemeral: false,
    },
  ],
  images: { fingerprints: [], aliases: [] },
});

/** The document that matches host() exactly (server-owned keys omitted, `auto` for the bridge). */
const matching = (): HostDoc => ({
  networks: [
    { name: 'br0', config: { 'ipv4.address': 'auto', 'ipv6.address': 'auto' } },
    { name: 'old', config: {} },
  ],
  storage_pools: [{ name: 'default', driver: 'dir', config: {} }],
  storage_volumes: [{ pool: 'default', name: 'data', config: {} }],
  profiles: [
    { name: 'default', config: {}, devices: { root: { type: 'disk', path: '/', pool: 'default' } } },
    { name: 'web', config: { 'limits.cpu': '1' }, devices: {} },
  ],
  containers: [
    { name: 'c1', profiles: ['default', 'web'], config: { 'limits.memory': '128MiB' }, devices: {} },
    { name: 'c9', config: {}, devices: {} },
  ],
});

test('a document that matches: an empty plan, with and without prune', () => {
  for (const prune of [false, true])
    assert.deepEqual(renderPlan(computePlan(matching(), host(), { mode: 'apply', prune })), [
      '0 to add, 0 to change, 0 to delete',
    ]);
});

test('golden plan: creates in dependency order, updates naming keys, prune deletes in reverse order', () => {
  const doc = matching();
  doc.config = { 'core.https_address': '127.0.0.1:8443', 'core.trust_password': 'new' };
  doc.projects = [
    { name: 'default', config: {} },
    { name: 'team', config: {} },
  ];
  doc.networks = [{ name: 'br0', config: { 'ipv4.address': 'auto', 'ipv6.address': 'none' } }];
  doc.storage_volumes = [{ pool: 'default', name: 'logs', config: {} }];
  doc.profiles![1] = { name: 'web', config: { 'limits.cpu': '2' }, devices: { eth0: { type: 'nic', network: 'br0' } } };
  doc.containers = [
    { name: 'c1', profiles: ['default', 'web'], config: { 'user.role': 'web' }, devices: {}, state: 'stopped' },
    { name: 'c2', source: { type: 'image', alias: 'bb' } },
  ];
  const plan = computePlan(doc, host(), { mode: 'apply', prune: true });
  assert.deepEqual(renderPlan(plan), [
    '~ server config: config.core.https_address',
    '+ project team',
    '~ network br0: config.ipv6.address',
    '+ storage volume default/logs',
    '~ profile web: config.limits.cpu, devices.eth0',
    '~ container c1: config.limits.memory, config.user.role, state',
    '+ container c2',
    '- container c9',
    '- storage volume default/data',
    '- network old',
    '3 to add, 4 to change, 3 to delete',
  ]);
  const step = (line: string) => plan.steps.find((s) => `${s.kind} ${s.name}` === line)!;
  assert.deepEqual(step('server config').body, { config: { 'core.https_address': '127.0.0.1:8443' } });
  // The server's own keys go back unchanged; the document's replace the rest.
  assert.deepEqual(step('container c1').body, {
    description: '',
    config: { 'image.os': 'busybox', 'volatile.eth0.hwaddr': '00:16:3e:00:00:01', 'user.role': 'web' },
    devices: {},
    architecture: 'x86_64',
    profiles: ['default', 'web'],
    ephemeral: false,
  });
  assert.equal(step('container c1').state, 'stopped');
  assert.deepEqual(step('network br0').body, {
    description: '',
    config: { 'ipv4.address': '10.4.5.1/24', 'ipv4.nat': 'true', 'ipv6.nat': 'true', 'ipv6.address': 'none' },
  });
  assert.deepEqual(step('container c2').body, {
    name: 'c2',
    description: '',
    config: {},
    source: { type: 'image', alias: 'bb' },
    profiles: ['default'],
    devices: {},
    ephemeral: false,
  });
  assert.equal(step('container c2').state, 'running');
  assert.equal(step('container c9').status, 'Running', 'a running container is stopped before its delete');
});

test('prune never deletes the default profile or project, a pool, or an unmanaged network', () => {
  const plan = computePlan({}, host(), { mode: 'apply', prune: true });
  assert.deepEqual(renderPlan(plan), [
    '- container c1',
    '- container c9',
    '- profile web',
    '- storage volume default/data',
    '- network br0',
    '- network old',
    '0 to add, 0 to change, 6 to delete',
  ]);
});

test('preseed: only the keys and devices given count; nothing is deleted; a state change alone writes no object', () => {
  const doc: HostDoc = {
    profiles: [{ name: 'default', devices: { eth0: { type: 'nic', network: 'br0' } } }],
    networks: [{ name: 'br0', config: { 'ipv4.nat': 'true' } }],
  };
  const plan = computePlan(doc, host(), { mode: 'preseed', prune: false });
  assert.deepEqual(renderPlan(plan), ['~ profile default: devices.eth0', '0 to add, 1 to change, 0 to delete']);
  assert.deepEqual(plan.steps[0]!.body, {
    description: '',
    config: {},
    devices: { root: { type: 'disk', path: '/', pool: 'default' }, eth0: { type: 'nic', network: 'br0' } },
  });
  const stop = computePlan({ containers: [{ name: 'c9', config: {}, devices: {}, state: 'stopped' }] }, host(), {
    mode: 'apply',
    prune: false,
  });
  assert.deepEqual(renderPlan(stop), ['~ container c9: state', '0 to add, 1 to change, 0 to delete']);
  assert.equal(stop.steps[0]!.body, undefined);
});

test('what cannot change is refused naming the object and key', () => {
  assert.throws(
    () =>
      computePlan({ storage_pools: [{ name: 'default', driver: 'btrfs' }] }, host(), { mode: 'apply', prune: false }),
    /storage pool "default": key "driver" cannot change \(dir on the server\)/,
  );
  assert.throws(
    () => computePlan({ networks: [{ name: 'eth0' }] }, host(), { mode: 'apply', prune: false }),
    /network "eth0": a host interface of that name exists and is not managed/,
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { autoPreseed } from './auto-preseed.ts';
import { computePlan } from './compute-plan.ts';
import type { HostState } from './host-state.ts';
import { parseDocument } from './parse-document.ts';
import { renderDump } from './render-dump.ts';

const empty = (): HostState => ({
  server: 'svcd',
  config: {},
  projects: [{ name: 'default', config: { 'features.images': 'true' } }],
  storage_pools: [],
  networks: [{ name: 'lo', type: 'loopback', managed: false, config: {} }],
  storage_volumes: [],
  profiles: [{ name: 'default', description: 'Default', config: {}, devices: {} }],
  containers: [],
  images: { fingerprints: [], aliases: [] },
});

test('--auto on an empty server: the pool, svcdbr0 with auto subnets and NAT, root disk and eth0', () => {
  assert.deepEqual(autoPreseed(empty(), { storageBackend: 'btrfs', networkAddress: '::', trustPassword: 'pw' }), {
    config: { 'core.https_address': '[::]:8443', 'core.trust_password': 'pw' },
    storage_pools: [{ name: 'default', driver: 'btrfs', config: {} }],
    networks: [
      {
        name: 'svcdbr0',
        type: 'bridge',
        config: { 'ipv4.address': 'auto', 'ipv4.nat': 'true', 'ipv6.address': 'auto', 'ipv6.nat': 'true' },
      },
    ],
    profiles: [
      {
        name: 'default',
        devices: {
          root: { type: 'disk', path: '/', pool: 'default' },
          eth0: { type: 'nic', name: 'eth0', network: 'svcdbr0' },
        },
      },
    ],
  });
});

test('--auto again, once set up: nothing to ask for; like lxd, no bridge where a managed network or a nic exists', () => {
  const h = empty();
  h.storage_pools = [{ name: 'default', driver: 'dir', config: {} }];
  h.networks.push({ name: 'svcdbr0', type: 'bridge', managed: true, config: {} });
  h.profiles[0]!.devices = { root: { type: 'disk', path: '/', pool: 'default' }, eth0: { type: 'nic', network: 'x' } };
  assert.deepEqual(autoPreseed(h, { storageBackend: 'dir' }), {});
  h.networks.pop();
  assert.deepEqual(autoPreseed(h, {}), {}, 'the default profile has a nic');
  h.networks.push({ name: 'other', type: 'bridge', managed: true, config: {} });
  h.profiles[0]!.devices = {};
  assert.deepEqual(autoPreseed(h, {}), {
    profiles: [{ name: 'default', devices: { root: { type: 'disk', path: '/', pool: 'default' } } }],
  });
});

test('--storage-backend never replaces an existing default pool of another driver', () => {
  const h = empty();
  h.storage_pools = [{ name: 'default', driver: 'dir', config: {} }];
  assert.throws(
    () => autoPreseed(h, { storageBackend: 'btrfs' }),
    /storage pool "default": key "driver": the pool exists with driver dir/,
  );
});

test('--dump: managed networks only, no hidden secrets; read back as a preseed it plans nothing', () => {
  const h = empty();
  h.config = { 'core.https_address': '127.0.0.1:8443', 'core.trust_password': true };
  h.storage_pools = [{ name: 'default', driver: 'dir', description: '', config: { source: '/srv/p' } }];
  h.networks.push({
    name: 'br0',
    type: 'bridge',
    managed: true,
    description: '',
    config: { 'ipv4.address': '10.1.1.1/24' },
  });
  const text = renderDump(h);
  const raw = parse(text);
  assert.deepEqual(raw.config, { 'core.https_address': '127.0.0.1:8443' });
  assert.deepEqual(
    raw.networks.map((n: { name: string }) => n.name),
    ['br0'],
  );
  const plan = computePlan(parseDocument(text, 'preseed'), h, { mode: 'preseed', prune: false });
  assert.deepEqual(plan.steps, []);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDocument } from './parse-document.ts';

test('a full apply document: scalars kept as written, defaults left absent', () => {
  const doc = parseDocument(
    [
      'config:',
      '  images.auto_update_interval: 0',
      'networks:',
      '- {name: br1, type: bridge, project: default, config: {ipv4.address: 10.1.2.1/24, ipv4.nat: false}}',
      'storage_pools: [{name: p1, driver: btrfs, config: {size: 1GiB}}]',
      'storage_volumes: [{pool: p1, name: v1, config: {size: 1.10GiB}}]',
      'profiles: [{name: web, config: {limits.cpu: 2}, devices: {eth0: {type: nic, network: br1}}}]',
      'containers:',
      '- name: c1',
      '  source: {type: image, alias: bb}',
      '  profiles: [default, web]',
      '  ephemeral: no',
      '  state: stopped',
      'cluster: null',
      '',
    ].join('\n'),
    'apply',
  );
  assert.deepEqual(doc, {
    config: { 'images.auto_update_interval': '0' },
    networks: [{ name: 'br1', type: 'bridge', config: { 'ipv4.address': '10.1.2.1/24', 'ipv4.nat': 'false' } }],
    storage_pools: [{ name: 'p1', driver: 'btrfs', config: { size: '1GiB' } }],
    storage_volumes: [{ name: 'v1', pool: 'p1', config: { size: '1.10GiB' } }],
    profiles: [{ name: 'web', config: { 'limits.cpu': '2' }, devices: { eth0: { type: 'nic', network: 'br1' } } }],
    containers: [
      {
        name: 'c1',
        config: {},
        devices: {},
        profiles: ['default', 'web'],
        ephemeral: false,
        state: 'stopped',
        source: { type: 'image', alias: 'bb' },
      },
    ],
  });
  assert.deepEqual(parseDocument('', 'preseed'), {});
});

test('invalid documents: the message names the object and the key', () => {
  const bad = (text: string, re: RegExp, mode: 'apply' | 'preseed' = 'apply') =>
    assert.throws(() => parseDocument(text, mode), re);
  bad('foo: 1', /^Error: document: unknown key "foo"/);
  bad('containers: [{name: c1}]', /document: unknown key "containers"/, 'preseed');
  bad('storage_volumes: []', /document: unknown key "storage_volumes"/, 'preseed');
  bad('profiles: [{name: p, devise: {}}]', /profile "p": unknown key "devise"/);
  bad(
    'containers: [{name: c1, source: {type: image, alias: bb, imgae: x}}]',
    /container "c1": "source": unknown key "imgae"/,
  );
  bad(
    'containers: [{name: c1, state: paused}]',
    /container "c1": key "state" must be running or stopped, got "paused"/,
  );
  bad('containers: [{name: c1, ephemeral: maybe}]', /container "c1": key "ephemeral" must be true or false/);
  bad(
    'containers: [{name: c1, ephemeral: true, state: stopped}]',
    /container "c1": key "state": an ephemeral container/,
  );
  bad('containers: [{name: c1, source: {type: copy}}]', /container "c1": key "source.type" must be image or none/);
  bad(
    'containers: [{name: c1, source: {type: image}}]',
    /container "c1": key "source" needs an alias or a fingerprint/,
  );
  bad('profiles: [{name: p, devices: {eth0: {network: br}}}]', /profile "p": device "eth0": key "type" is required/);
  bad('profiles: [{name: p, config: {a: [1]}}]', /profile "p": "config": key "a" must be a string/);
  bad('profiles: [{name: p}, {name: p}]', /profile "p": given twice/);
  bad('profiles: [{config: {}}]', /profiles\[0\]: key "name" is required/);
  bad('networks: [{name: "a/b"}]', /networks\[0\]: key "name" "a\/b" is not a valid name/);
  bad('networks: [{name: n, project: other}]', /network "n": key "project"/);
  bad('storage_pools: [{name: p}]', /storage pool "p": key "driver" is required/);
  bad('storage_volumes: [{name: v, type: container, pool: p}]', /storage volume "p\/v": key "type"/);
  bad('cluster: {enabled: true}', /document: key "cluster": clustering is not supported/);
  bad('a: [', /document: not valid YAML/);
  bad('a: 1\na: 2', /document: not valid YAML/);
  bad('- 1', /document: must be a map of sections/);
});

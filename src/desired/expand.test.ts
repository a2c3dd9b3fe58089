import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ValidationError } from './errors.ts';
import { expandConfig } from './expand.ts';
import { expandInstanceType } from './instance-types.ts';

test('profiles expand in order, local config and devices win; devices replace whole', () => {
  const out = expandConfig(
    [
      {
        config: { 'limits.cpu': '1', 'user.a': 'p1' },
        devices: {
          root: { type: 'disk', path: '/', pool: 'default' },
          eth0: { type: 'nic', nictype: 'bridged', parent: 'br0' },
        },
      },
      {
        config: { 'user.a': 'p2' },
        devices: { eth0: { type: 'nic', nictype: 'bridged', parent: 'br1', hwaddr: '00:16:3e:00:00:01' } },
      },
    ],
    { config: { 'limits.cpu': '2' }, devices: { root: { type: 'disk', path: '/', pool: 'fast' } } },
  );
  assert.deepEqual(out.config, { 'limits.cpu': '2', 'user.a': 'p2' });
  assert.deepEqual(out.devices, {
    root: { type: 'disk', path: '/', pool: 'fast' },
    eth0: { type: 'nic', nictype: 'bridged', parent: 'br1', hwaddr: '00:16:3e:00:00:01' },
  });
});

test('instance types: cN-mM and named types expand to limits; others are refused', () => {
  assert.deepEqual(expandInstanceType('c2-m4'), { 'limits.cpu': '2', 'limits.memory': '4GiB' });
  assert.deepEqual(expandInstanceType('c1-m0.5'), { 'limits.cpu': '1', 'limits.memory': '512MiB' });
  assert.deepEqual(expandInstanceType('t2.micro'), { 'limits.cpu': '1', 'limits.memory': '1GiB' });
  assert.deepEqual(expandInstanceType('aws:t2.medium'), { 'limits.cpu': '2', 'limits.memory': '4GiB' });
  for (const bad of ['', 'c0-m1', 'big', 'c2-m', 'c2-m4x', 'gce:n1-standard-1'])
    assert.throws(() => expandInstanceType(bad), ValidationError, bad);
});

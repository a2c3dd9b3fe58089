import assert from 'node:assert/strict';
import { it } from 'node:test';
import { withRootPool } from './container-snapshots.ts';

it('withRootPool: a copied snapshot follows its new container pool, local root or profile root', () => {
  const profileRoot = { root: { type: 'disk', path: '/', pool: 'bt' } };
  // root from a profile: becomes a local device on the new pool; other devices kept
  assert.deepEqual(withRootPool({ eth0: { type: 'nic' } }, { ...profileRoot, eth0: { type: 'nic' } }, 'default'), {
    eth0: { type: 'nic' },
    root: { type: 'disk', path: '/', pool: 'default' },
  });
  // a local root keeps its other keys
  assert.deepEqual(
    withRootPool(
      { root: { type: 'disk', path: '/', pool: 'bt', size: '1GiB' } },
      { root: { type: 'disk', path: '/', pool: 'bt', size: '1GiB' } },
      'default',
    ),
    {
      root: { type: 'disk', path: '/', pool: 'default', size: '1GiB' },
    },
  );
  // already there, or no root at all: unchanged
  const local = { data: { type: 'disk', path: '/data', source: '/srv' } };
  assert.equal(withRootPool(local, { ...local, ...profileRoot }, 'bt'), local);
  assert.equal(withRootPool(local, local, 'default'), local);
});

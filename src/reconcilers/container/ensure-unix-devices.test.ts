import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSimDeviceNodes } from '../../test-support/sim-device-nodes.ts';
import { TerminalError } from '../runtime/index.ts';
import { ensureUnixDevices } from './ensure-unix-devices.ts';
import type { UnixDeviceRequest } from './device-specs.ts';

const idmap = {
  uid: [{ nsid: 0, hostid: 1_000_000, count: 65536 }],
  gid: [{ nsid: 0, hostid: 1_000_000, count: 65536 }],
};
const fuse: UnixDeviceRequest = {
  device: 'fuse',
  type: 'char',
  source: '/dev/fuse',
  target: '/dev/fuse',
  uid: 0,
  gid: 5,
  mode: 0o660,
  required: true,
};

test('a unix-char node is made in the devices dir from the host node, owned through the idmap', async () => {
  const nodes = createSimDeviceNodes({ '/dev/fuse': { type: 'char', major: 10, minor: 229 } });
  const out = await ensureUnixDevices({ nodes, dir: '/s/c1/devices', requests: [fuse], idmap });
  assert.equal(nodes.dirs.get('/s/c1/devices'), 0o711);
  const [p, spec] = [...nodes.made][0]!;
  assert.equal(p, out[0]!.source);
  assert.deepEqual(
    { ...spec, path: undefined },
    { path: undefined, type: 'char', major: 10, minor: 229, mode: 0o660, uid: 1_000_000, gid: 1_000_005 },
  );
  assert.equal(out[0]!.target, '/dev/fuse');
});

test('nodes of devices no longer wanted are removed; a missing required host node is terminal', async () => {
  const nodes = createSimDeviceNodes({ '/dev/fuse': { type: 'char', major: 10, minor: 229 } });
  await ensureUnixDevices({ nodes, dir: '/s/c1/devices', requests: [fuse], idmap });
  await ensureUnixDevices({ nodes, dir: '/s/c1/devices', requests: [], idmap });
  assert.equal(nodes.made.size, 0);
  await assert.rejects(
    ensureUnixDevices({ nodes, dir: '/s/c1/devices', requests: [{ ...fuse, source: '/dev/nope' }], idmap }),
    TerminalError,
  );
  assert.deepEqual(
    await ensureUnixDevices({
      nodes,
      dir: '/s/c1/devices',
      requests: [{ ...fuse, source: '/dev/nope', required: false }],
      idmap,
    }),
    [],
  );
  await assert.rejects(
    ensureUnixDevices({ nodes, dir: '/s/c1/devices', requests: [{ ...fuse, uid: 70000 }], idmap }),
    /uid 70000 is not mapped/,
  );
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateDevices } from './devices.ts';
import { checkNicHost, type NicHostProbe } from './devices-nic.ts';
import { ValidationError } from './errors.ts';

const refuse = (devices: Record<string, Record<string, string>>, re: RegExp) =>
  assert.throws(
    () => validateDevices(devices),
    (e: Error) => e instanceof ValidationError && re.test(e.message),
    JSON.stringify(devices),
  );

test('t17 nic types: the keys each nictype takes', () => {
  validateDevices({
    m: { type: 'nic', nictype: 'macvlan', parent: 'eno1', name: 'eth1', hwaddr: '00:16:3e:00:00:01', mtu: '1400' },
    p: {
      type: 'nic',
      nictype: 'p2p',
      name: 'eth2',
      host_name: 'vp2p0',
      'ipv4.routes': '10.1.0.0/24',
      'ipv6.routes': 'fd00:1::/64',
      'limits.max': '10Mbit',
    },
    f: { type: 'nic', nictype: 'physical', parent: 'eno2', name: 'eth3', mtu: '1500' },
    s: { type: 'nic', nictype: 'sriov', parent: 'eno3' },
  });
  refuse(
    { x: { type: 'nic', nictype: 'macvlan' } },
    /Device "x" \(nic\): "parent" \(the host interface\) is required for nictype=macvlan/,
  );
  refuse({ x: { type: 'nic', nictype: 'physical', name: 'eth1' } }, /"parent" .* nictype=physical/);
  refuse({ x: { type: 'nic', nictype: 'sriov' } }, /"parent" .* nictype=sriov/);
  refuse(
    { x: { type: 'nic', nictype: 'p2p', parent: 'br0' } },
    /Device "x" \(nic\): "parent" does not apply to nictype=p2p/,
  );
  refuse(
    { x: { type: 'nic', nictype: 'macvlan', parent: 'e', host_name: 'v1' } },
    /"host_name" does not apply to nictype=macvlan/,
  );
  refuse(
    { x: { type: 'nic', nictype: 'physical', parent: 'e', 'limits.max': '1Mbit' } },
    /"limits.max" does not apply to nictype=physical/,
  );
  refuse({ x: { type: 'nic', nictype: 'macvlan', parent: 'e', network: 'n' } }, /"network" does not apply/);
  refuse({ x: { type: 'nic', nictype: 'p2p', 'ipv4.routes': '10.0.0.0/33' } }, /invalid "ipv4.routes"/);
  refuse(
    { x: { type: 'nic', nictype: 'p2p', 'limits.max': '1Mbit', 'limits.egress': '1Mbit' } },
    /"limits.max" sets both/,
  );
  refuse({ x: { type: 'nic', nictype: 'macvlan', parent: 'a/b' } }, /invalid "parent"/);
});

const host = (
  names: string[],
  sriov: { ok: boolean; missing?: string } = {
    ok: false,
    missing: 'no /sys/class/net/eno1/device/sriov_totalvfs (the device has no SR-IOV capability)',
  },
): NicHostProbe & { asked: string[] } => {
  const asked: string[] = [];
  return { asked, interfaces: async () => names.map((name) => ({ name })), sriov: async (p) => (asked.push(p), sriov) };
};
const rejects = (p: Promise<void>, re: RegExp) =>
  assert.rejects(p, (e: Error) => e instanceof ValidationError && re.test(e.message));

test('t17 nic host checks: a missing parent, sriov refused naming what is missing, unchanged nics skipped', async () => {
  await checkNicHost(
    {
      m: { type: 'nic', nictype: 'macvlan', parent: 'eno1' },
      b: { type: 'nic', parent: 'nobridge' },
      p: { type: 'nic', nictype: 'p2p' },
    },
    host(['eno1']),
  );
  await rejects(
    checkNicHost({ m: { type: 'nic', nictype: 'macvlan', parent: 'eno9' } }, host(['eno1'])),
    /Device "m" \(nic\): invalid "parent": host interface "eno9" does not exist/,
  );
  await rejects(
    checkNicHost({ f: { type: 'nic', nictype: 'physical', parent: 'eno9' } }, host([])),
    /Device "f" .*"eno9" does not exist/,
  );
  const h = host(['eno1']);
  await rejects(
    checkNicHost({ s: { type: 'nic', nictype: 'sriov', parent: 'eno1' } }, h),
    /Device "s" \(nic\): nictype=sriov is not available on parent "eno1": no \/sys\/class\/net\/eno1\/device\/sriov_totalvfs/,
  );
  assert.deepEqual(h.asked, ['eno1']);
  await rejects(
    checkNicHost({ s: { type: 'nic', nictype: 'sriov', parent: 'eno1' } }, host(['eno1'], { ok: true })),
    /not supported by svcd yet/,
  );
  // A physical parent inside the running container is not on the host: the unchanged nic is not checked again.
  const f = { type: 'nic', nictype: 'physical', parent: 'eno2' };
  await checkNicHost({ f }, host([]), { f });
  await rejects(checkNicHost({ f }, host([]), { f: { ...f, parent: 'eno3' } }), /"eno2" does not exist/);
});

/**
 * createNetworkHost on the real host: its interfaces, state of lo and of a bridge the test creates (no
 * address, no traffic), used subnets, and the kernel probes (this kernel: vxlan yes, gre and fan no).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { createNetworkHost } from '../../src/host/network/network-host.ts';

const skip = process.getuid?.() !== 0 ? 'needs root' : false;
const BR = `t16h${process.pid % 100000}`;

describe('network host on the real host', { skip }, () => {
  const host = createNetworkHost();
  before(async () => {
    await runCommand('ip', ['link', 'add', BR, 'type', 'bridge']);
    await runCommand('ip', ['link', 'set', BR, 'mtu', '1400', 'address', '00:16:3e:16:00:01']);
  });
  after(async () => {
    await runCommand('ip', ['link', 'delete', BR]).catch(() => {});
  });

  it('lists lo as loopback and the test bridge as a bridge', async () => {
    const list = await host.interfaces();
    assert.deepEqual(
      list.find((i) => i.name === 'lo'),
      { name: 'lo', type: 'loopback' },
    );
    assert.deepEqual(
      list.find((i) => i.name === BR),
      { name: BR, type: 'bridge' },
    );
    assert.deepEqual(
      list.map((i) => i.name),
      [...list.map((i) => i.name)].sort(),
    );
  });

  it('state of lo and of the bridge, within 5 ms', async () => {
    const lo = await host.state('lo');
    assert.equal(lo?.type, 'loopback');
    assert.equal(lo?.state, 'up');
    assert.ok(lo?.addresses.some((a) => a.address === '127.0.0.1' && a.netmask === '8'));
    const br = await host.state(BR);
    assert.equal(br?.hwaddr, '00:16:3e:16:00:01');
    assert.equal(br?.mtu, 1400);
    assert.equal(br?.state, 'down');
    assert.equal(br?.type, 'broadcast');
    assert.equal(await host.state(`${BR}x`), undefined);
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      await host.state(BR);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    assert.ok(times[25]! <= 5, `median ${times[25]} ms`);
  });

  it('used subnets include the subnet of an address the test adds', async () => {
    await runCommand('ip', ['addr', 'add', '10.254.77.1/24', 'dev', BR]);
    try {
      // the bridge is down: no connected route, the address itself is used
      assert.ok((await host.usedSubnets()).includes('10.254.77.1/32'));
      await runCommand('ip', ['link', 'set', BR, 'up']);
      const used = await host.usedSubnets();
      assert.ok(used.includes('10.254.77.0/24'), used.join(' '));
      assert.ok(!used.includes('0.0.0.0/0'));
      assert.equal((await host.state(BR))?.addresses.find((a) => a.family === 'inet')?.address, '10.254.77.1');
    } finally {
      await runCommand('ip', ['addr', 'del', '10.254.77.1/24', 'dev', BR]);
      await runCommand('ip', ['link', 'set', BR, 'down']);
    }
    assert.ok(!(await host.usedSubnets()).includes('10.254.77.0/24'));
  });

  it('probes: vxlan present, gre, fan and MAAS missing, and no trial link left behind', async () => {
    assert.deepEqual(await host.probe('vxlan'), { ok: true });
    const gre = await host.probe('gre');
    assert.equal(gre.ok, false);
    assert.deepEqual(await host.probe('fan'), {
      ok: false,
      missing: ['the Ubuntu fan kernel patch (/proc/sys/net/fan)'],
    });
    assert.equal((await host.probe('maas')).ok, false);
    assert.ok(!(await host.interfaces()).some((i) => i.name.startsWith('svp')));
  });
});

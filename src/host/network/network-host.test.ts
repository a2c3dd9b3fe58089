import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createNetworkHost } from './network-host.ts';

const DEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  br0:    5000      50    0    0    0     0          0         0     7000      70    0    0    0     0       0          0
  eth0:    900       9    0    0    0     0          0         0      800       8    0    0    0     0       0          0
`;
const ROUTE = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
br0\t000C370A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
`;
const FIB_TRIE = `Main:
     |-- 10.55.12.1
        /32 host LOCAL
     |-- 192.0.2.7
        /32 host LOCAL
     |-- 127.0.0.1
        /32 host LOCAL
`;
const IF_INET6 = `fd420001000000000000000000000001 05 40 00 80     br0
fe80000000000000021122fffe334455 05 40 20 80     br0
`;
const LEASES = `1718000000 00:16:3e:aa:bb:01 10.55.12.23 c1 01:00:16:3e:aa:bb:01\n`;

let root: string;
const proc = () => path.join(root, 'proc');
const sys = () => path.join(root, 'sys');

async function iface(name: string, files: Record<string, string>, dirs: string[] = [], links: string[] = []) {
  const dir = path.join(sys(), 'class/net', name);
  await mkdir(dir, { recursive: true });
  for (const [f, v] of Object.entries(files)) await writeFile(path.join(dir, f), `${v}\n`);
  for (const d of dirs) await mkdir(path.join(dir, d));
  for (const l of links) await symlink('/nonexistent', path.join(dir, l));
}

before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-nethost-'));
  await mkdir(path.join(proc(), 'net'), { recursive: true });
  for (const [f, t] of Object.entries({ dev: DEV, route: ROUTE, fib_trie: FIB_TRIE, if_inet6: IF_INET6 }))
    await writeFile(path.join(proc(), 'net', f), t);
  await iface('lo', { address: '00:00:00:00:00:00', mtu: '65536', operstate: 'unknown', flags: '0x9', type: '772' });
  await iface('br0', { address: '00:16:3e:00:00:01', mtu: '1500', operstate: 'unknown', flags: '0x1003', type: '1' }, [
    'bridge',
  ]);
  await iface(
    'eth0',
    { address: '52:54:00:12:34:56', mtu: '1400', operstate: 'down', flags: '0x1002', type: '1' },
    [],
    ['device'],
  );
  await iface('bond0', { type: '1' }, ['bonding']);
  await iface('veth9', { type: '1' });
  await mkdir(path.join(root, 'net1'));
  await writeFile(path.join(root, 'net1', 'dnsmasq.leases'), LEASES);
});
after(() => rm(root, { recursive: true, force: true }));

describe('createNetworkHost on a fixture /proc and /sys', () => {
  const host = () =>
    createNetworkHost({
      procRoot: proc(),
      sysRoot: sys(),
      which: async (t) => t === 'ovs-vsctl',
      run: async () => {
        throw new Error('no spawn expected');
      },
    });

  it('interfaces: every entry with its type word, sorted', async () => {
    assert.deepEqual(await host().interfaces(), [
      { name: 'bond0', type: 'bond' },
      { name: 'br0', type: 'bridge' },
      { name: 'eth0', type: 'physical' },
      { name: 'lo', type: 'loopback' },
      { name: 'veth9', type: 'unknown' },
    ]);
  });

  it('state: sysfs facts, addresses and counters of one interface; unknown operstate with IFF_UP is up', async () => {
    assert.deepEqual(await host().state('br0'), {
      addresses: [
        { family: 'inet', address: '10.55.12.1', netmask: '24', scope: 'global' },
        { family: 'inet6', address: 'fd42:1::1', netmask: '64', scope: 'global' },
        { family: 'inet6', address: 'fe80::211:22ff:fe33:4455', netmask: '64', scope: 'link' },
      ],
      counters: { bytes_received: 5000, bytes_sent: 7000, packets_received: 50, packets_sent: 70 },
      hwaddr: '00:16:3e:00:00:01',
      mtu: 1500,
      state: 'up',
      type: 'broadcast',
    });
    const eth0 = await host().state('eth0');
    assert.equal(eth0?.state, 'down');
    assert.equal(eth0?.mtu, 1400);
    assert.equal((await host().state('lo'))?.type, 'loopback');
  });

  it('state: undefined for a missing or unsafe name', async () => {
    assert.equal(await host().state('nope0'), undefined);
    assert.equal(await host().state('../x'), undefined);
  });

  it('leases: the lease file of the network dir; none without a file', async () => {
    assert.deepEqual(await host().leases({ name: 'net1', dir: path.join(root, 'net1') }), [
      { hostname: 'c1', hwaddr: '00:16:3e:aa:bb:01', address: '10.55.12.23', type: 'dynamic', location: 'none' },
    ]);
    assert.deepEqual(await host().leases({ name: 'net2', dir: path.join(root, 'net2') }), []);
  });

  it('usedSubnets: routes and addresses', async () => {
    assert.deepEqual(await host().usedSubnets(), ['10.55.12.0/24', '127.0.0.0/8', '192.0.2.0/24', 'fd42:1::/64']);
  });

  it('probe: tools and files without spawning; link trials are remembered', async () => {
    const calls: string[][] = [];
    const h = createNetworkHost({
      procRoot: proc(),
      sysRoot: sys(),
      which: async () => false,
      run: async (_f, args) => {
        calls.push([...args]);
        if (args[0] === 'link' && args[1] === 'add' && args.includes('gre'))
          throw new Error('Error: Unknown device type.');
        return '';
      },
    });
    assert.deepEqual(await h.probe('openvswitch'), { ok: false, missing: ['Open vSwitch (the ovs-vsctl tool)'] });
    assert.deepEqual(await h.probe('fan'), { ok: false, missing: ['the Ubuntu fan kernel patch (/proc/sys/net/fan)'] });
    assert.deepEqual(await h.probe('maas'), { ok: false, missing: ['a MAAS server (maas.api.url)'] });
    assert.deepEqual(await h.probe('gre'), { ok: false, missing: ['GRE tunnels (kernel module ip_gre)'] });
    assert.deepEqual(await h.probe('vxlan'), { ok: true });
    const n = calls.length;
    await h.probe('gre');
    await h.probe('vxlan');
    assert.equal(calls.length, n, 'probes ran once');
    assert.ok(
      calls.some((c) => c[0] === 'link' && c[1] === 'delete'),
      'the trial link is deleted',
    );
    assert.deepEqual(await host().probe('openvswitch'), { ok: true });
  });
});

/**
 * Managed networks heal: a bridge deleted or a dnsmasq killed behind svcd's back is back within seconds,
 * with the running container's veth on the bridge again and its lease kept; after a simulated host
 * reboot (containers killed, the bridge, dnsmasq and the nftables table gone) the network is back before
 * the container that needs it starts; a network that cannot be set up blocks only its own containers.
 * Test networks: no NAT, no routing, no IPv6 (traffic stays on the test's bridge).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import {
  freeSubnet24,
  hostAddresses,
  hostLink,
  processesMentioning,
  safeNetworkConfig,
  svcdTable,
} from '../support/networks.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();

describe('managed networks heal (real bridges, dnsmasq, nftables, LXC)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  const net = `t16h${process.pid % 10000}`;
  const blocked = `t16b${process.pid % 10000}`;
  let cidr = '';
  let prefix3 = '';
  const waitOp = (res: { status: number; json: any; text: string }, want = 'Success') => waitOpOf(api, res, want);
  const state = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
  const ipv4Of = async (name: string) =>
    ((await state(name)).network?.eth0?.addresses ?? []).find((a: any) => a.family === 'inet')?.address as
      | string
      | undefined;
  const leases = async () =>
    (await api.get(`/1.0/networks/${net}/leases`)).json.metadata as {
      hostname: string;
      address: string;
      type: string;
    }[];

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    ({ cidr, prefix3 } = await freeSubnet24(1));
    const r = await api.post('/1.0/networks', { name: net, config: safeNetworkConfig(cidr, { 'dns.domain': 'heal' }) });
    assert.equal(r.status, 200, r.text);
    await waitOp(
      await api.post('/1.0/containers', {
        name: 'c1',
        config: { 'boot.autostart': 'true' },
        devices: { eth0: { type: 'nic', nictype: 'bridged', parent: net } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(await api.put('/1.0/containers/c1/state', { action: 'start' }));
    await eventually(async () => (await ipv4Of('c1'))?.startsWith(`${prefix3}.`), 'c1 to get a DHCP lease', 20_000);
  });
  after(async () => {
    if (d?.proc.exitCode !== null || d?.proc.signalCode !== null) await d?.restart().catch(() => {});
    await teardownContainers(d, api, [imgDir]);
  });

  test('a bridge deleted behind svcd is repaired within seconds, the veth back on it, the lease kept', async () => {
    const before = await ipv4Of('c1');
    const hostName = (await state('c1')).network.eth0.host_name as string;
    assert.equal((await hostLink(hostName)).master, net);
    const t0 = Date.now();
    await run('ip', ['link', 'del', net]);
    await eventually(
      async () => (await hostLink(net)).exists && (await hostAddresses(net)).includes(cidr),
      'the bridge back with its address',
      10_000,
    );
    const repairedMs = Date.now() - t0;
    await eventually(async () => (await hostLink(hostName)).master === net, "c1's veth on the bridge again", 10_000);
    console.log(`# bridge repaired in ${repairedMs} ms`);
    assert.ok(repairedMs <= 2_500, `repaired in ${repairedMs} ms (target 2 s)`);
    assert.equal(await ipv4Of('c1'), before, 'the container keeps its address');
    assert.ok(
      (await leases()).some((l) => l.hostname === 'c1' && l.address === before),
      'the lease is kept',
    );
  });

  test('a dnsmasq killed behind svcd is restarted, leases kept', async () => {
    const [pid] = await processesMentioning(path.join(d.stateDir, 'networks', net));
    assert.ok(pid, 'a dnsmasq for the network');
    const before = await leases();
    process.kill(pid, 'SIGKILL');
    const t0 = Date.now();
    await eventually(
      async () => (await processesMentioning(path.join(d.stateDir, 'networks', net))).some((p) => p !== pid),
      'a new dnsmasq',
      10_000,
    );
    const restartedMs = Date.now() - t0;
    console.log(`# dnsmasq restarted in ${restartedMs} ms`);
    assert.ok(restartedMs <= 2_500, `restarted in ${restartedMs} ms (target 2 s)`);
    assert.deepEqual((await leases()).map((l) => l.address).sort(), before.map((l) => l.address).sort());
  });

  test('after a simulated host reboot the network is back before its container starts; a broken network blocks only its own', async () => {
    // A second network and a container on it; then the reboot makes that network impossible to set up.
    const other = await freeSubnet24(2);
    assert.equal(
      (await api.post('/1.0/networks', { name: blocked, config: safeNetworkConfig(other.cidr) })).status,
      200,
    );
    await waitOp(
      await api.post('/1.0/containers', {
        name: 'c2',
        devices: { eth0: { type: 'nic', nictype: 'bridged', parent: blocked } },
        source: { type: 'image', alias: 'bb' },
      }),
    );
    await waitOp(await api.put('/1.0/containers/c2/state', { action: 'start' }));
    assert.equal(await d.stop(), 0);
    const lxcPath = path.join(d.stateDir, 'containers');
    for (const id of await readdir(lxcPath)) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath]).catch(() => {});
    for (const n of [net, blocked]) await run('ip', ['link', 'del', n]).catch(() => {});
    for (const pid of await processesMentioning(path.join(d.stateDir, 'networks'))) process.kill(pid, 'SIGKILL');
    await run('nft', ['delete', 'table', 'inet', 'svcd']).catch(() => {});
    // The blocked network's name is now a host veth svcd did not make: it must not take it over.
    await run('ip', ['link', 'add', blocked, 'type', 'veth', 'peer', 'name', `${blocked}p`]);
    try {
      await d.restart();
      // Running with its nic: right after the restart the state may still be the one recorded before it.
      await eventually(
        async () => {
          const s = await state('c1');
          return s.status === 'Running' && !!s.network?.eth0?.host_name;
        },
        'c1 running again with its nic',
        60_000,
      );
      const hostName = (await state('c1')).network.eth0.host_name as string;
      assert.equal((await hostLink(hostName)).master, net, 'c1 started on its bridge: the network was there first');
      assert.ok(await svcdTable(), 'the nftables table is back');
      await eventually(
        async () => (await processesMentioning(path.join(d.stateDir, 'networks', net))).length === 1,
        'one dnsmasq for the network',
        10_000,
      );
      const b = (await api.get(`/1.0/networks/${blocked}`)).json.metadata;
      await eventually(
        async () => (await api.get(`/1.0/networks/${blocked}`)).json.metadata.status === 'Errored',
        'the broken network errored',
        20_000,
      );
      console.log(`# broken network: ${b.status} ${b.status_detail ?? ''}`);
      assert.notEqual((await state('c2')).status, 'Running', 'c2 waits for its network');
      assert.equal((await hostLink(blocked)).master, undefined, "svcd left the host's veth alone");
    } finally {
      await run('ip', ['link', 'del', blocked]).catch(() => {});
    }
    // Once the obstacle is gone the network comes up and c2 follows.
    await eventually(
      async () => (await api.get(`/1.0/networks/${blocked}`)).json.metadata.status === 'Created',
      'the network set up once possible',
      60_000,
    );
    await eventually(async () => (await state('c2')).status === 'Running', 'c2 running once its network is', 60_000);
  });
});

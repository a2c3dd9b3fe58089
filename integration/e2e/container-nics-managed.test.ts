/**
 * Containers on a MANAGED network: a network with NAT, routing and IPv6 off, so nothing leaves its
 * bridge; two busybox containers get leases from its dnsmasq at boot (one a static `ipv4.address`),
 * the leases endpoint lists them, they reach and resolve each other by name through the bridge's
 * dnsmasq, and a duplicate or out-of-subnet static address is refused with 400. `after` removes the
 * containers and the network through the API, then the bridge if anything is left.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runInContainer } from '../../src/host/lxc/attach.ts';
import { lxcIdOf, startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli } from '../support/lxc-cli.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { freeSubnet24, safeNetworkConfig } from '../support/networks.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping managed-network nic e2e tests: ${skip}`);

describe('containers on a managed network', { skip }, () => {
  const net = `t16m${process.pid}`.slice(0, 15);
  let subnet = '';
  const domain = 't16';
  let d: Daemon;
  let api: Client;
  let imgDir = '';

  const exec = async (name: string, command: string[]) =>
    runInContainer({ name: await lxcIdOf(d.stateDir, name), lxcPath: path.join(d.stateDir, 'containers'), command });

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    const free = await freeSubnet24(3);
    subnet = free.prefix3;
    const res = await api.post('/1.0/networks', {
      name: net,
      config: safeNetworkConfig(free.cidr, { 'dns.domain': domain }),
    });
    assert.equal(res.status, 200, res.text);
  });
  // The containers, then the network (its bridge, dnsmasq and rules), then the daemon.
  after(() => teardownContainers(d, api, [imgDir]));

  test('two containers get leases, one static, and reach and resolve each other through the bridge', async () => {
    const launch = async (name: string, nic: Record<string, string>) => {
      await waitOp(
        api,
        await api.post('/1.0/containers', {
          name,
          source: { type: 'image', alias: 'bb' },
          devices: { eth0: { type: 'nic', network: net, ...nic } },
        }),
      );
      await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    };
    await launch('c1', {});
    await launch('c2', { 'ipv4.address': `${subnet}.50` });

    // Bad static addresses: taken, outside the subnet, the gateway.
    const create = (nic: Record<string, string>) =>
      api.post('/1.0/containers', {
        name: 'bad',
        source: { type: 'image', alias: 'bb' },
        devices: { eth0: { type: 'nic', network: net, ...nic } },
      });
    assert.match(expectError(await create({ 'ipv4.address': `${subnet}.50` }), 400), /already used by container "c2"/);
    assert.match(expectError(await create({ 'ipv4.address': '192.0.2.7' }), 400), /outside network/);
    assert.match(expectError(await create({ 'ipv4.address': `${subnet}.1` }), 400), /gateway/);

    const leases = await eventually(
      async () => {
        const l = (await api.get(`/1.0/networks/${net}/leases`)).json.metadata as {
          hostname: string;
          address: string;
          type: string;
          hwaddr: string;
        }[];
        const c1 = l?.find((x) => x.hostname === 'c1' && x.address.startsWith(`${subnet}.`));
        const c2 = l?.find((x) => x.hostname === 'c2' && x.address === `${subnet}.50`);
        return c1 && c2 ? { c1, c2 } : undefined;
      },
      'both leases',
      30_000,
    );
    assert.equal(leases.c2.type, 'static');
    assert.equal(leases.c2.hwaddr, (await api.get('/1.0/containers/c2')).json.metadata.config['volatile.eth0.hwaddr']);

    // The addresses inside, then a ping and a name lookup over the bridge.
    await eventually(
      async () =>
        (await exec('c2', ['/bin/ip', '-4', 'addr', 'show', 'eth0'])).includes(`${subnet}.50/24`) || undefined,
      'c2 has its static address',
      30_000,
    );
    await eventually(
      async () => (await exec('c1', ['/bin/ip', '-4', 'addr', 'show', 'eth0'])).includes(`${subnet}.`) || undefined,
      'c1 has an address',
      30_000,
    );
    await exec('c1', ['/bin/ping', '-c', '1', '-W', '2', `${subnet}.50`]);
    const answer = await eventually(
      async () => {
        const out = await exec('c1', ['/bin/nslookup', `c2.${domain}`, `${subnet}.1`]).catch(() => '');
        return out.includes(`${subnet}.50`) ? out : undefined;
      },
      'c2 resolved through the bridge dnsmasq',
      15_000,
    );
    assert.match(answer, new RegExp(`${subnet.replace(/\./g, '\\.')}\\.50`));
    await exec('c1', ['/bin/ping', '-c', '1', '-W', '2', `c2.${domain}`]);
  });

  test("Debian's lxc: launch --network, network attach and detach on a running container, list-leases, info", async () => {
    const lxc = await lxcCli(d.stateDir);
    await lxc.ok(['launch', 'bb', 'c3', '--network', net]);
    const dev = (await api.get('/1.0/containers/c3')).json.metadata.devices.eth0;
    assert.deepEqual(dev, { type: 'nic', nictype: 'bridged', parent: net, name: 'eth0' }, 'what a 3.6 server is sent');
    await eventually(
      async () => (await lxc.ok(['network', 'list-leases', net])).includes('c3') || undefined,
      'c3 in lxc network list-leases',
      30_000,
    );
    // A second nic attached live (no restart), then detached.
    const pid = (await api.get('/1.0/containers/c3/state')).json.metadata.pid;
    await lxc.ok(['network', 'attach', net, 'c3', 'eth1']);
    assert.equal((await api.get('/1.0/containers/c3/state')).json.metadata.pid, pid, 'not restarted');
    assert.match(await exec('c3', ['/bin/ip', 'link', 'show', 'eth1']), /eth1/);
    const st = (await api.get('/1.0/containers/c3/state')).json.metadata.network.eth1;
    assert.ok(st.host_name && st.hwaddr && st.mtu > 0, JSON.stringify(st));
    assert.equal(st.hwaddr, (await api.get('/1.0/containers/c3')).json.metadata.config['volatile.eth1.hwaddr']);
    await lxc.ok(['network', 'detach', net, 'c3', 'eth1']);
    await assert.rejects(exec('c3', ['/bin/ip', 'link', 'show', 'eth1']));
    assert.match(await lxc.ok(['network', 'info', net]), /State: up/);
    assert.ok(
      ((await api.get(`/1.0/networks/${net}`)).json.metadata.used_by as string[]).includes('/1.0/containers/c3'),
    );
  });
});

/**
 * A managed bridge without addresses (ipv4.address and ipv6.address none: a plain L2 bridge), as LXD
 * makes it: the bridge up, no dnsmasq and no firewall rules for it, state `up` although no port gave it
 * a carrier (LXD reports the administrative state, IFF_UP), an empty lease list, a container whose nic
 * is attached to it; an address given later starts dnsmasq, taken away again stops it. The bridge never
 * carries traffic to anything but its own container (no NAT, no routing, no IPv6).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { freeSubnet24, hostLink, processesMentioning, svcdRuleText } from '../support/networks.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping L2 bridge e2e tests: ${skip}`);

const L2 = { 'ipv4.address': 'none', 'ipv6.address': 'none' };
/** IFF_UP in /sys/class/net/<name>/flags. */
const adminUp = async (name: string) =>
  (parseInt(await readFile(`/sys/class/net/${name}/flags`, 'utf8'), 16) & 1) === 1;

describe('a managed bridge without addresses', { skip }, () => {
  const net = `nl2b${process.pid % 100000}`;
  let d: Daemon;
  let api: Client;
  let cli: LxcCli;
  let imgDir = '';
  /** This network's dnsmasq processes (their conf file is in the network's directory). */
  const dnsmasqs = () => processesMentioning(path.join(d.stateDir, 'networks', net, 'dnsmasq.conf'));

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    cli = await lxcCli(d.stateDir);
  });
  after(async () => {
    await cli?.cleanup();
    await teardownContainers(d, api, [imgDir]);
  });

  test('bad input: an invalid ipv4.address is refused naming the key, nothing made', async () => {
    const msg = expectError(
      await api.post('/1.0/networks', { name: net, config: { ...L2, 'ipv4.address': '10.1.2.3/33' } }),
      400,
    );
    assert.match(msg, /"ipv4\.address"/);
    expectError(await api.get(`/1.0/networks/${net}`), 404);
    assert.equal((await hostLink(net)).exists, false);
  });

  test('created up without dnsmasq or rules; state up; lxc network info; a container attached; an address starts dnsmasq and none stops it', async () => {
    const made = await api.post('/1.0/networks', { name: net, config: L2 });
    assert.equal(made.status, 200, made.text);
    assert.equal(made.json.status, 'Success');
    assert.deepEqual((await api.get(`/1.0/networks/${net}`)).json.metadata.config, L2);
    assert.equal((await hostLink(net)).exists, true);
    assert.equal(await adminUp(net), true, 'the bridge is administratively up');
    assert.deepEqual(await dnsmasqs(), [], 'no dnsmasq for a bridge without addresses');
    assert.ok(!(await svcdRuleText()).includes(`"${net}"`), 'no firewall rule names the bridge');

    const st = (await api.get(`/1.0/networks/${net}/state`)).json.metadata;
    assert.equal(st.state, 'up', JSON.stringify(st));
    assert.equal(st.type, 'broadcast');
    assert.deepEqual(
      st.addresses.filter((a: any) => a.scope !== 'link'),
      [],
    );
    assert.deepEqual((await api.get(`/1.0/networks/${net}/leases`)).json.metadata, []);
    const info = await cli.run(['network', 'info', net]);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /State: up/);

    // A container with a bridged nic on it starts, its host-side veth a port of the bridge.
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'nl2c',
        source: { type: 'image', alias: 'bb' },
        devices: { eth0: { type: 'nic', network: net } },
      }),
    );
    await waitOp(api, await api.put('/1.0/containers/nl2c/state', { action: 'start' }));
    const hostName = await eventually(
      async () => (await api.get('/1.0/containers/nl2c/state')).json.metadata?.network?.eth0?.host_name || undefined,
      'the nic has a host side',
    );
    assert.equal((await hostLink(hostName)).master, net);
    assert.equal((await api.get(`/1.0/networks/${net}/state`)).json.metadata.state, 'up');
    await waitOp(api, await api.put('/1.0/containers/nl2c/state', { action: 'stop', force: true }));

    // An address (no NAT): dnsmasq starts; back to none: it stops.
    const { cidr } = await freeSubnet24(7);
    const given = await api.patch(`/1.0/networks/${net}`, {
      config: { 'ipv4.address': cidr, 'ipv4.nat': 'false', 'ipv4.routing': 'false' },
    });
    assert.equal(given.status, 200, given.text);
    assert.equal((await dnsmasqs()).length, 1, 'dnsmasq serves the new address');
    assert.match(await svcdRuleText(), new RegExp(`iifname "${net}"`));
    const taken = await api.patch(`/1.0/networks/${net}`, { config: { 'ipv4.address': 'none' } });
    assert.equal(taken.status, 200, taken.text);
    assert.deepEqual(await dnsmasqs(), [], 'dnsmasq stopped with the last address');
    assert.deepEqual((await api.get(`/1.0/networks/${net}/leases`)).json.metadata, []);
    assert.ok(!(await svcdRuleText()).includes(`"${net}"`));
    assert.equal(await adminUp(net), true);
  });
});

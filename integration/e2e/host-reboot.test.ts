/**
 * A simulated host reboot: the daemon's whole tree killed (its private PostgreSQL server too), the containers
 * stopped, the bridge, dnsmasq and svcd's nftables tables gone, the btrfs pool unmounted and its loop device
 * detached. Restarted on the same state directory, svcd brings everything back with no request: the pool
 * mounted before anything on it reconciles (no "not mounted" failure), the network with dnsmasq serving
 * before its containers start (each gets its DHCP lease on its first DISCOVER, which udhcpc's output in the
 * console log shows), and every container desired running, running.
 * Test network: no NAT, no routing, no IPv6 (traffic stays on the test's bridge).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startBusyboxDaemon, teardownContainers, waitOp as waitOpOf } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { freeSubnet24, hostLink, processesMentioning, safeNetworkConfig, svcdTable } from '../support/networks.ts';
import { simulateReboot } from '../support/simulate-reboot.ts';
import { loopsUnder, mountsUnder } from '../support/storage-host.ts';

const skip = await lxcSkipReason();
const COUNT = 4;

describe('a simulated host reboot (real LXC, btrfs on a loop file, a bridge with dnsmasq, nftables)', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  const net = `rbt${process.pid % 100000}`;
  const pool = 'rbtpool';
  const names = Array.from({ length: COUNT }, (_, i) => `rbt${i}`);
  let prefix3 = '';
  const waitOp = (res: { status: number; json: any; text: string }) => waitOpOf(api, res);
  const state = async (name: string) => (await api.get(`/1.0/containers/${name}/state`)).json.metadata;
  const ipv4Of = async (name: string) =>
    ((await state(name)).network?.eth0?.addresses ?? []).find((a: any) => a.family === 'inet')?.address as
      | string
      | undefined;

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    let cidr: string;
    ({ cidr, prefix3 } = await freeSubnet24(7));
    assert.equal((await api.post('/1.0/networks', { name: net, config: safeNetworkConfig(cidr) })).status, 200);
    assert.equal(
      (await api.post('/1.0/storage-pools', { name: pool, driver: 'btrfs', config: { size: '512MiB' } })).status,
      200,
    );
    const devices = { eth0: { type: 'nic', nictype: 'bridged', parent: net }, root: { type: 'disk', path: '/', pool } };
    await Promise.all(
      names.map(async (name) =>
        waitOp(await api.post('/1.0/containers', { name, devices, source: { type: 'image', alias: 'bb' } })),
      ),
    );
    await Promise.all(
      names.map(async (name) => waitOp(await api.put(`/1.0/containers/${name}/state`, { action: 'start' }))),
    );
    for (const name of names)
      await eventually(async () => (await ipv4Of(name))?.startsWith(`${prefix3}.`), `${name} to get a lease`, 30_000);
  });
  after(async () => {
    if (d?.proc.exitCode !== null || d?.proc.signalCode !== null) await d?.restart().catch(() => {});
    await teardownContainers(d, api, [imgDir]);
  });

  test('everything comes back by itself: pool mounted first, network serving, containers running with a lease on the first try', async () => {
    // The reboot: nothing of svcd, its containers or its host objects survives.
    await simulateReboot(d, [net]);
    assert.equal((await mountsUnder(d.stateDir)).length, 0, 'nothing mounted under the state dir');
    assert.equal((await loopsUnder(d.stateDir)).length, 0, 'no loop device of the state dir');
    assert.equal((await hostLink(net)).exists, false);
    assert.equal(await svcdTable(), undefined);

    const t0 = Date.now();
    await d.restart();
    const answeredMs = Date.now() - t0;
    // The API answers only once the pools converged on this boot.
    const poolRow = (await api.get(`/1.0/storage-pools/${pool}`)).json.metadata;
    assert.equal(poolRow.status, 'Created');
    assert.ok(
      (await mountsUnder(d.stateDir)).some((m) => m.fsType === 'btrfs'),
      'the btrfs pool is mounted when the API first answers',
    );
    for (const name of names)
      await eventually(
        async () => (await state(name)).status === 'Running' && (await ipv4Of(name))?.startsWith(`${prefix3}.`),
        `${name} running with a lease`,
        60_000,
      );
    const allBackMs = Date.now() - t0;
    console.log(`# API answered after ${answeredMs} ms; ${COUNT} containers running with leases after ${allBackMs} ms`);

    assert.ok(await svcdTable(), 'the nftables table is back');
    assert.equal(
      (await processesMentioning(path.join(d.stateDir, 'networks', net))).length,
      1,
      'one dnsmasq for the network',
    );
    assert.doesNotMatch(d.output(), /is not ready: not mounted/, 'nothing reconciled before its pool was mounted');
    // udhcpc prints each DISCOVER it broadcasts: one means dnsmasq answered the first.
    for (const name of names) {
      const consoleLog = await eventually(
        async () => {
          const text = (await api.get(`/1.0/containers/${name}/console`)).text;
          return /obtained/.test(text) ? text : undefined;
        },
        `${name}'s lease in its console log`,
        10_000,
      );
      const discovers =
        consoleLog.slice(0, consoleLog.search(/obtained/)).match(/(sending|broadcasting) discover/g) ?? [];
      assert.equal(discovers.length, 1, `${name} sent ${discovers.length} DISCOVERs before its lease:\n${consoleLog}`);
    }
  });
});

/**
 * Container nics on real LXC, on an UNMANAGED bridge this suite makes (`t16n<pid>`, 10.<x>.<y>.1/24, no
 * forwarding, no NAT: nothing leaves it): a nic at start with its generated MAC kept across restarts,
 * a second nic attached and detached live (no restart) with tc limits and a MAC filter in `bridge svcd`,
 * busybox udhcpc started at boot on eth0, the state's nic fields, and the 400s of bad nic input. `after`
 * removes the containers (API), the daemon, the bridge, and the nft table if it is left empty.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, lxcIdOf, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';
import { defaultHostName } from '../../src/reconcilers/container/device-specs.ts';
import { nicIfbOf } from '../../src/host/lxc/nic-limits.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping container nic e2e tests: ${skip}`);

describe('container nics on an unmanaged bridge', { skip }, () => {
  const bridge = `t16n${process.pid}`.slice(0, 15);
  const subnet = `10.${160 + (process.pid % 60)}.${process.pid % 250}`;
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let bridgeMade = false;

  const state = (name: string) => api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata);
  const runningPid = async (name: string, notPid?: number) =>
    (
      await eventually(
        async () => {
          const st = await state(name);
          return st.status === 'Running' && st.pid > 0 && st.pid !== notPid ? st : undefined;
        },
        `${name} running`,
        30_000,
      )
    ).pid as number;
  /** `ip -o link` inside the container: name → MAC. */
  const linksIn = async (pid: number) => {
    const { stdout } = await run('nsenter', ['-t', String(pid), '-n', 'ip', '-o', 'link', 'show']);
    return new Map([...stdout.matchAll(/^\d+: ([^:@]+)[^\n]*link\/ether ([0-9a-f:]+)/gm)].map((m) => [m[1]!, m[2]!]));
  };
  const nftTable = async () =>
    run('nft', ['-j', 'list', 'table', 'bridge', 'svcd']).then(
      (r) => JSON.stringify(JSON.parse(r.stdout)),
      () => '',
    );

  before(async () => {
    await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
    bridgeMade = true;
    await run('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
    await run('ip', ['link', 'set', bridge, 'up']);
    ({ d, api, imgDir } = await startBusyboxDaemon());
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir]);
    if (bridgeMade) await run('ip', ['link', 'del', bridge]).catch(() => {});
    // The nic filter table, if svcd left it without any nic in it (other suites may use it: only when empty).
    const t = await run('nft', ['-j', 'list', 'table', 'bridge', 'svcd']).then(
      (r) => r.stdout,
      () => '',
    );
    if (t && !/"elem"/.test(t) && !/"nic-/.test(t))
      await run('nft', ['delete', 'table', 'bridge', 'svcd']).catch(() => {});
  });

  test('bad nic input is refused with 400', async () => {
    const create = (devices: Record<string, Record<string, string>>) =>
      api.post('/1.0/containers', { name: 'bad', source: { type: 'image', alias: 'bb' }, devices });
    const cases: [string, Record<string, string>, RegExp][] = [
      ['bad address', { parent: bridge, 'ipv4.address': '10.1.2.300' }, /"ipv4\.address": must be an IPv4 address/],
      ['vlan', { parent: bridge, vlan: '10' }, /"vlan" is not available on this host: .*802\.1Q/i],
      [
        'static address on an unmanaged parent',
        { parent: bridge, 'ipv4.address': `${subnet}.5` },
        new RegExp(`"ipv4.address" needs a managed network as parent; "${bridge}" is not one`),
      ],
      ['bad bit rate', { parent: bridge, 'limits.ingress': 'fast' }, /bit rate/],
      [
        'routes without a static address',
        { parent: bridge, 'ipv4.routes': '10.99.0.0/24' },
        /needs a static "ipv4\.address"/,
      ],
    ];
    for (const [what, nic, re] of cases)
      assert.match(expectError(await create({ eth0: { type: 'nic', nictype: 'bridged', ...nic } }), 400), re, what);
    assert.deepEqual((await api.get('/1.0/containers')).json.metadata, []);
  });

  test('a nic at start, a second one attached and detached live with limits and a MAC filter, the MAC kept across restarts', async () => {
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'nics',
        source: { type: 'image', alias: 'bb' },
        devices: { eth0: { type: 'nic', nictype: 'bridged', parent: bridge } },
      }),
    );
    const mac0 = (await api.get('/1.0/containers/nics')).json.metadata.config['volatile.eth0.hwaddr'];
    assert.match(mac0, /^00:16:3e(:[0-9a-f]{2}){3}$/);
    await waitOp(api, await api.put('/1.0/containers/nics/state', { action: 'start' }));
    const pid = await runningPid('nics');
    const id = await lxcIdOf(d.stateDir, 'nics');
    const host0 = defaultHostName(id, 'eth0');
    assert.equal((await linksIn(pid)).get('eth0'), mac0);
    assert.equal(
      (await readFile(`/sys/class/net/${host0}/master/uevent`, 'utf8')).match(/INTERFACE=(.*)/)?.[1],
      bridge,
    );

    // The state lists the nic with its host side, MAC, MTU and counters.
    const eth0 = (await state('nics')).network.eth0;
    assert.equal(eth0.host_name, host0);
    assert.equal(eth0.hwaddr, mac0);
    assert.equal(eth0.mtu, 1500);
    assert.equal(typeof eth0.counters.bytes_received, 'number');

    // busybox init started udhcpc on eth0 (no DHCP server on this bridge: it keeps asking).
    await eventually(
      async () => {
        for (const p of await readdir(`/proc/${pid}/root/proc`).catch(() => [] as string[])) {
          if (!/^\d+$/.test(p)) continue;
          const cmd = await readFile(`/proc/${pid}/root/proc/${p}/cmdline`, 'utf8').catch(() => '');
          if (cmd.includes('udhcpc') && cmd.includes('hostname:nics')) return true;
        }
        return undefined;
      },
      'udhcpc running in the container',
      15_000,
    );

    // A second nic, live, with an ingress limit and MAC filtering.
    const patch = await api.patch('/1.0/containers/nics', {
      devices: {
        eth1: {
          type: 'nic',
          nictype: 'bridged',
          parent: bridge,
          'limits.ingress': '10Mbit',
          'security.mac_filtering': 'true',
        },
      },
    });
    assert.equal(patch.status, 200, patch.text);
    const mac1 = (await api.get('/1.0/containers/nics')).json.metadata.config['volatile.eth1.hwaddr'];
    const host1 = defaultHostName(id, 'eth1');
    await eventually(
      async () => (await linksIn(pid)).get('eth1') === mac1 || undefined,
      'eth1 inside with its MAC',
      30_000,
    );
    assert.equal(await runningPid('nics'), pid, 'not restarted');
    await eventually(
      async () => {
        const { stdout } = await run('tc', ['qdisc', 'show', 'dev', host1]);
        return /qdisc htb 1: root/.test(stdout) || undefined;
      },
      'the htb qdisc on the host veth',
      15_000,
    );
    assert.match((await run('tc', ['class', 'show', 'dev', host1])).stdout, /rate 10Mbit/);
    await eventually(
      async () => (await nftTable()).includes(`"nic-${host1}"`) || undefined,
      'the MAC filter chain',
      15_000,
    );
    assert.ok((await nftTable()).includes(mac1), 'the filter names the nic MAC');
    assert.deepEqual((await state('nics')).pending_restart, []);

    // Detached live: gone inside and on the host, the filter with it.
    const cur = (await api.get('/1.0/containers/nics')).json.metadata;
    const { eth1: _eth1, ...rest } = cur.devices;
    const put = await api.put('/1.0/containers/nics', {
      config: cur.config,
      devices: rest,
      profiles: cur.profiles,
      description: cur.description,
    });
    await waitOp(api, put);
    assert.equal((await linksIn(pid)).has('eth1'), false);
    assert.equal(await runningPid('nics'), pid, 'not restarted');
    await assert.rejects(readFile(`/sys/class/net/${host1}/ifindex`, 'utf8'));
    assert.equal((await nftTable()).includes(`"nic-${host1}"`), false);

    // A veth deleted behind svcd's back is attached again by the next reconcile (a config change here).
    await run('ip', ['link', 'del', host0]);
    assert.equal(await api.patch('/1.0/containers/nics', { config: { 'user.poke': '1' } }).then((r) => r.status), 200);
    await eventually(async () => (await linksIn(pid)).get('eth0') === mac0 || undefined, 'eth0 attached again', 30_000);

    // Restarted: the same MAC.
    await waitOp(api, await api.put('/1.0/containers/nics/state', { action: 'restart', force: true }));
    const pid2 = await runningPid('nics', pid);
    assert.equal((await api.get('/1.0/containers/nics')).json.metadata.config['volatile.eth0.hwaddr'], mac0);
    assert.equal((await linksIn(pid2)).get('eth0'), mac0);
  });
  test('a nic with limits at start: htb on its new veth and an ifb of its own; the ifb goes with the stop', async () => {
    const limits = { 'limits.ingress': '10Mbit', 'limits.egress': '2Mbit' };
    await waitOp(
      api,
      await api.post('/1.0/containers', {
        name: 'limited',
        source: { type: 'image', alias: 'bb' },
        devices: { eth0: { type: 'nic', nictype: 'bridged', parent: bridge, ...limits } },
      }),
    );
    await waitOp(api, await api.put('/1.0/containers/limited/state', { action: 'start' }));
    const host = defaultHostName(await lxcIdOf(d.stateDir, 'limited'), 'eth0');
    const ifb = nicIfbOf(host);
    const tc = async (what: string, dev: string) => (await run('tc', [what, 'show', 'dev', dev])).stdout;
    assert.match(await tc('class', host), /rate 10Mbit/, 'ingress: htb on the host veth');
    assert.match(await tc('qdisc', host), /qdisc ingress ffff:/);
    assert.match(await tc('class', ifb), /rate 2Mbit/, 'egress: htb on the ifb');
    await waitOp(api, await api.put('/1.0/containers/limited/state', { action: 'stop', force: true }));
    await eventually(
      async () =>
        readFile(`/sys/class/net/${ifb}/ifindex`, 'utf8').then(
          () => undefined,
          () => true,
        ),
      'the ifb removed with the stop',
      15_000,
    );
  });
});

/**
 * nic types beyond bridged on real LXC, on veth pairs this suite makes (no dummy driver on this kernel):
 * a macvlan on one end of `t17a<pid>`/`t17b<pid>`, a p2p veth (host end `t17h<pid>` on no bridge, a
 * host route to it), and a physical nic: `t17p<pid>` (peer `t17q<pid>`) moved into the container and
 * given back under its own name on stop and on detach; at start and live. The sriov refusal and bad
 * input are 400s. Nothing is addressed or sent: the route only points at the host end. `after` removes
 * the containers (API), the daemon and the veth pairs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { eventually, expectError, type Client } from '../support/http.ts';
import { lxcCli } from '../support/lxc-cli.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const skip = await lxcSkipReason();
if (skip) console.log(`# skipping nic type e2e tests: ${skip}`);

describe('t17 nic types: macvlan, p2p, physical, sriov', { skip }, () => {
  const p = process.pid;
  const [macParent, macPeer, phys, physPeer, p2pHost] = [
    `t17a${p}`,
    `t17b${p}`,
    `t17p${p}`,
    `t17q${p}`,
    `t17h${p}`,
  ].map((n) => n.slice(0, 15)) as [string, string, string, string, string];
  const route = `10.${200 + (p % 50)}.${p % 250}.0/24`;
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  const made: string[] = [];

  const onHost = (name: string) =>
    access(`/sys/class/net/${name}`).then(
      () => true,
      () => false,
    );
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
  /** Inside the container: name → { kind, mac, mtu }. */
  const linksIn = async (pid: number) => {
    const { stdout } = await run('nsenter', ['-t', String(pid), '-n', 'ip', '-j', '-d', 'link', 'show']);
    const links = JSON.parse(stdout) as {
      ifname: string;
      address: string;
      mtu: number;
      linkinfo?: { info_kind?: string };
    }[];
    return new Map(links.map((l) => [l.ifname, { kind: l.linkinfo?.info_kind ?? '', mac: l.address, mtu: l.mtu }]));
  };
  const edit = async (
    name: string,
    f: (devices: Record<string, Record<string, string>>) => Record<string, Record<string, string>>,
  ) => {
    const cur = (await api.get(`/1.0/containers/${name}`)).json.metadata;
    await waitOp(
      api,
      await api.put(`/1.0/containers/${name}`, {
        config: cur.config,
        devices: f(cur.devices),
        profiles: cur.profiles,
        description: cur.description,
      }),
    );
  };

  before(async () => {
    for (const [a, b] of [
      [macParent, macPeer],
      [phys, physPeer],
    ] as const) {
      await run('ip', ['link', 'add', a, 'type', 'veth', 'peer', 'name', b]);
      made.push(a);
      await run('ip', ['link', 'set', a, 'up']);
      await run('ip', ['link', 'set', b, 'up']);
    }
    ({ d, api, imgDir } = await startBusyboxDaemon());
  });
  after(async () => {
    await teardownContainers(d, api, [imgDir]);
    for (const n of [...made, p2pHost]) await run('ip', ['link', 'del', n]).catch(() => {});
  });

  test('t17 bad input and refusals: sriov, a missing parent, keys of another nictype, vlan', async () => {
    const create = (nic: Record<string, string>) =>
      api.post('/1.0/containers', {
        name: 'bad',
        source: { type: 'image', alias: 'bb' },
        devices: { n0: { type: 'nic', ...nic } },
      });
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        'sriov',
        { nictype: 'sriov', parent: macParent },
        new RegExp(
          `Device "n0" \\(nic\\): nictype=sriov is not available on parent "${macParent}": no /sys/class/net/${macParent}/device/sriov_totalvfs`,
        ),
      ],
      [
        'missing macvlan parent',
        { nictype: 'macvlan', parent: `t17z${p}`.slice(0, 15) },
        /Device "n0" \(nic\): invalid "parent": host interface "t17z\d+" does not exist/,
      ],
      [
        'missing physical parent',
        { nictype: 'physical', parent: `t17z${p}`.slice(0, 15) },
        /invalid "parent": host interface "t17z\d+" does not exist/,
      ],
      ['no parent', { nictype: 'macvlan' }, /"parent" \(the host interface\) is required for nictype=macvlan/],
      [
        'host_name on macvlan',
        { nictype: 'macvlan', parent: macParent, host_name: 'x1' },
        /"host_name" does not apply to nictype=macvlan/,
      ],
      ['parent on p2p', { nictype: 'p2p', parent: macParent }, /"parent" does not apply to nictype=p2p/],
      ['vlan on macvlan', { nictype: 'macvlan', parent: macParent, vlan: '5' }, /"vlan" is not available on this host/],
      ['bad mtu', { nictype: 'physical', parent: phys, mtu: '20' }, /invalid "mtu"/],
      ['unknown nictype', { nictype: 'ipvlan', parent: macParent }, /invalid "nictype"/],
    ];
    for (const [what, nic, re] of cases) assert.match(expectError(await create(nic), 400), re, what);
    assert.deepEqual((await api.get('/1.0/containers')).json.metadata, []);
  });

  test('t17 at start: macvlan, p2p and physical; the state shows each; physical given back on stop; one holder per physical parent', async () => {
    const devices = {
      m0: { type: 'nic', nictype: 'macvlan', parent: macParent, mtu: '1400' },
      p0: { type: 'nic', nictype: 'p2p', host_name: p2pHost, 'ipv4.routes': route },
      f0: { type: 'nic', nictype: 'physical', parent: phys, name: 'eth5', hwaddr: '00:16:3e:17:00:05', mtu: '1420' },
    };
    const physWas = {
      mac: (await readFile(`/sys/class/net/${phys}/address`, 'utf8')).trim(),
      mtu: (await readFile(`/sys/class/net/${phys}/mtu`, 'utf8')).trim(),
    };
    await waitOp(
      api,
      await api.post('/1.0/containers', { name: 'nt', source: { type: 'image', alias: 'bb' }, devices }),
    );
    const cfg = (await api.get('/1.0/containers/nt')).json.metadata.config;
    assert.equal(cfg['volatile.f0.hwaddr'], undefined, 'a physical nic keeps its own MAC');
    // A second holder of the physical parent is refused.
    const other = await api.post('/1.0/containers', {
      name: 'nt2',
      source: { type: 'image', alias: 'bb' },
      devices: { f: { type: 'nic', nictype: 'physical', parent: phys } },
    });
    assert.match(
      expectError(other, 400),
      new RegExp(`Device "f" \\(nic\\): invalid "parent": host interface "${phys}" is already used by container "nt"`),
    );

    await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'start' }));
    const pid = await runningPid('nt');
    const inside = await linksIn(pid);
    assert.deepEqual(inside.get('m0'), { kind: 'macvlan', mac: cfg['volatile.m0.hwaddr'], mtu: 1400 });
    assert.equal(inside.get('p0')?.kind, 'veth');
    assert.equal(inside.get('p0')?.mac, cfg['volatile.p0.hwaddr']);
    assert.deepEqual(
      inside.get('eth5'),
      { kind: 'veth', mac: '00:16:3e:17:00:05', mtu: 1420 },
      'the physical parent (a veth end here) inside as eth5, with its hwaddr and mtu',
    );
    assert.equal(await onHost(phys), false, 'moved off the host');
    assert.equal(await onHost(`${p2pHost}/master`), false, 'the p2p host end is on no bridge');
    assert.match((await run('ip', ['-4', 'route', 'show', route])).stdout, new RegExp(`dev ${p2pHost}`));
    const st = await state('nt');
    for (const n of ['m0', 'p0', 'eth5']) assert.ok(st.network[n], `state shows ${n}`);
    assert.equal(st.network.p0.host_name, p2pHost);

    // A restart: LXC gives the physical nic back at the stop and moves it in again at the start.
    await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'restart', force: true }));
    const pid2 = await runningPid('nt', pid);
    assert.deepEqual([...(await linksIn(pid2)).keys()].filter((n) => n !== 'lo').sort(), ['eth5', 'm0', 'p0']);

    await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'stop', force: true }));
    await eventually(() => onHost(phys).then((x) => x || undefined), `${phys} given back on stop`, 15_000);
    // With the MAC and MTU it had before the container's start.
    assert.deepEqual(
      {
        mac: (await readFile(`/sys/class/net/${phys}/address`, 'utf8')).trim(),
        mtu: (await readFile(`/sys/class/net/${phys}/mtu`, 'utf8')).trim(),
      },
      physWas,
    );
    assert.equal((await run('ip', ['-4', 'route', 'show', route])).stdout.trim(), '', 'the p2p route went');
  });

  test('t17 live: physical detached (given back) and attached, macvlan and p2p attached and detached, a live physical given back on stop', async () => {
    await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'start' }));
    const pid = await runningPid('nt');
    await eventually(async () => (await linksIn(pid)).has('eth5') || undefined, 'eth5 inside', 15_000);

    // Physical detached live: back on the host under its own name.
    await edit('nt', ({ f0: _f0, ...rest }) => rest);
    assert.equal(await onHost(phys), true, 'given back on detach');
    const physMac = await readFile(`/sys/class/net/${phys}/address`, 'utf8');
    assert.equal((await linksIn(pid)).has('eth5'), false);

    // Attached live: a physical nic, a second macvlan, and the p2p goes.
    await edit('nt', ({ p0: _p0, ...rest }) => ({
      ...rest,
      f1: { type: 'nic', nictype: 'physical', parent: phys, name: 'eth6', mtu: '1450', hwaddr: '00:16:3e:17:00:01' },
      m1: { type: 'nic', nictype: 'macvlan', parent: macParent },
    }));
    const links = await linksIn(pid);
    assert.deepEqual(links.get('eth6'), { kind: 'veth', mac: '00:16:3e:17:00:01', mtu: 1450 });
    assert.equal(links.get('m1')?.kind, 'macvlan');
    assert.equal(links.has('p0'), false);
    assert.equal(await onHost(p2pHost), false, 'the p2p pair went');
    assert.equal(await onHost(phys), false);
    assert.equal(await runningPid('nt'), pid, 'not restarted');
    assert.deepEqual((await state('nt')).pending_restart, []);

    // Drift: the macvlan deleted behind svcd's back is seen (no config change) and made again.
    await run('nsenter', ['-t', String(pid), '-n', 'ip', 'link', 'del', 'm0']);
    await eventually(
      async () => (await linksIn(pid)).get('m0')?.kind === 'macvlan' || undefined,
      'm0 made again',
      20_000,
    );

    // The macvlan detached live.
    await edit('nt', ({ m1: _m1, ...rest }) => rest);
    assert.equal((await linksIn(pid)).has('m1'), false);

    // Stopped: the physical nic moved in live is given back (else the netns would take it down with it).
    await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'stop', force: true }));
    assert.equal(await onHost(phys), true, 'given back before the stop');
    assert.equal(await readFile(`/sys/class/net/${phys}/address`, 'utf8'), physMac, 'the same interface, its own MAC');
    assert.equal(
      (await readFile(`/sys/class/net/${phys}/mtu`, 'utf8')).trim(),
      '1500',
      'the MTU it had before svcd moved it in',
    );
    assert.match(
      await readFile(`/sys/class/net/${phys}/iflink`, 'utf8'),
      new RegExp(`^${(await readFile(`/sys/class/net/${physPeer}/ifindex`, 'utf8')).trim()}\n`),
      "still the peer of the test's veth",
    );
  });

  test("t17 Debian's lxc: config device add/remove of macvlan and physical nics on a running container; the sriov refusal", async () => {
    const cli = await lxcCli(d.stateDir);
    try {
      await waitOp(api, await api.put('/1.0/containers/nt/state', { action: 'start' }));
      const pid = await runningPid('nt');
      await cli.ok([
        'config',
        'device',
        'add',
        'nt',
        'mv',
        'nic',
        'nictype=macvlan',
        `parent=${macParent}`,
        'name=eth7',
      ]);
      await cli.ok(['config', 'device', 'remove', 'nt', 'f1']);
      await cli.ok(['config', 'device', 'add', 'nt', 'ph', 'nic', 'nictype=physical', `parent=${phys}`, 'name=eth8']);
      const links = await linksIn(pid);
      assert.equal(links.get('eth7')?.kind, 'macvlan');
      assert.equal(links.has('eth8'), true);
      assert.equal(links.has('eth6'), false);
      assert.match(
        await cli.fail(['config', 'device', 'add', 'nt', 'sr', 'nic', 'nictype=sriov', `parent=${macParent}`]),
        /nictype=sriov is not available on parent/,
      );
      // While it holds the interface (not on the host now), other writes to it pass.
      await cli.ok(['config', 'set', 'nt', 'user.t17', '1']);
      await cli.ok(['config', 'device', 'remove', 'nt', 'ph']);
      assert.equal(await onHost(phys), true);
      // A physical nic from a profile: attached live, the container's later writes pass, given back when the profile goes.
      assert.equal(
        (
          await api.post('/1.0/profiles', {
            name: 't17pp',
            devices: { pp: { type: 'nic', nictype: 'physical', parent: phys, name: 'eth9' } },
          })
        ).status,
        200,
      );
      await cli.ok(['profile', 'add', 'nt', 't17pp']);
      assert.equal((await linksIn(pid)).has('eth9'), true);
      await cli.ok(['config', 'set', 'nt', 'user.t17', '2']);
      await cli.ok(['profile', 'remove', 'nt', 't17pp']);
      assert.equal((await linksIn(pid)).has('eth9'), false);
      assert.equal(await onHost(phys), true);
      assert.equal(await runningPid('nt'), pid, 'not restarted');
    } finally {
      await cli.cleanup();
    }
  });
});

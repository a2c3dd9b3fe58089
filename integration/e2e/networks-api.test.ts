/**
 * /1.0/networks on a real daemon. The first suite needs only the API and the host's interfaces; the
 * second creates bridges (the network reconciler on the real host). Safety: test networks have NAT off, no IPv6, no routing; the only bridge made here by hand
 * has no ports and stays down.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { subscribeEvents } from '../support/events.ts';
import { checkSpecFields } from '../support/spec-fields.ts';
import { freeSubnet24, safeNetworkConfig, svcdRuleText, svcdTable } from '../support/networks.ts';
import { client, eventually, expectError, type Client } from '../support/http.ts';

const run = promisify(execFile);
const tag = process.pid % 10000;
/** A bridge this test makes by hand (down, no ports): an unmanaged host interface with a subnet. */
const hostBridge = `t16h${tag}`;
const hostSubnet = `10.217.${tag % 250}`;
const SAFE = { 'ipv4.nat': 'false', 'ipv4.routing': 'false', 'ipv6.address': 'none' };

/** A 400 whose message names every fragment. */
async function refused(api: Client, body: unknown, status: number, ...fragments: string[]): Promise<void> {
  const msg = expectError(await api.post('/1.0/networks', body), status);
  for (const f of fragments) assert.ok(msg.includes(f), `"${msg}" should name ${f}`);
}

describe('networks API: host interfaces, refusals', () => {
  let d: Daemon;
  let api: Client;
  before(async () => {
    await run('ip', ['link', 'add', hostBridge, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${hostSubnet}.1/24`, 'dev', hostBridge]);
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => {
    await d?.destroy().catch(() => {});
    await run('ip', ['link', 'delete', hostBridge]).catch(() => {});
  });

  test('the list shows the host interfaces as unmanaged, with their type, sorted by name', async () => {
    const urls = (await api.get('/1.0/networks')).json.metadata as string[];
    assert.ok(urls.includes('/1.0/networks/lo'), JSON.stringify(urls));
    assert.ok(urls.includes(`/1.0/networks/${hostBridge}`));
    assert.deepEqual(urls, [...urls].sort());
    const all = (await api.get('/1.0/networks?recursion=1')).json.metadata as any[];
    const lo = all.find((n) => n.name === 'lo');
    assert.deepEqual(
      { type: lo.type, managed: lo.managed, config: lo.config, description: lo.description },
      { type: 'loopback', managed: false, config: {}, description: '' },
    );
    assert.equal(all.find((n) => n.name === hostBridge).type, 'bridge');
    const bridges = (await api.get(`/1.0/networks?recursion=1&filter=${encodeURIComponent('type eq bridge')}`)).json
      .metadata as any[];
    assert.ok(
      bridges.some((n) => n.name === hostBridge) && bridges.every((n) => n.type === 'bridge'),
      JSON.stringify(bridges.map((n) => n.name)),
    );
    const filteredUrls = (await api.get(`/1.0/networks?filter=${encodeURIComponent('name eq lo')}`)).json.metadata;
    assert.deepEqual(filteredUrls, ['/1.0/networks/lo']);
  });

  test('a host interface: GET with ETag and used_by; PUT, PATCH, rename, delete and leases refused; state readable', async () => {
    await api.post('/1.0/profiles', {
      name: 't16prof',
      devices: { eth0: { type: 'nic', nictype: 'bridged', parent: hostBridge } },
    });
    const res = await api.get(`/1.0/networks/${hostBridge}`);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.headers.etag);
    assert.deepEqual(res.json.metadata.used_by, ['/1.0/profiles/t16prof']);
    assert.equal(res.json.metadata.managed, false);
    assert.match(
      expectError(await api.put(`/1.0/networks/${hostBridge}`, { config: {} }), 400),
      /not a managed network/,
    );
    assert.match(
      expectError(await api.patch('/1.0/networks/lo', { config: { 'ipv4.nat': 'true' } }), 400),
      /not a managed network/,
    );
    assert.match(expectError(await api.post('/1.0/networks/lo', { name: 'lo2' }), 400), /not a managed network/);
    assert.match(expectError(await api.delete('/1.0/networks/lo'), 400), /not a managed network/);
    assert.match(expectError(await api.get('/1.0/networks/lo/leases'), 400), /not a managed network/);
    await api.delete('/1.0/profiles/t16prof');

    const st = (await api.get('/1.0/networks/lo/state')).json.metadata;
    assert.equal(st.type, 'loopback');
    assert.equal(st.state, 'up');
    assert.equal(st.mtu, 65536);
    assert.ok(
      st.addresses.some((a: any) => a.family === 'inet' && a.address === '127.0.0.1' && a.netmask === '8'),
      JSON.stringify(st.addresses),
    );
    assert.ok(
      st.counters.packets_received > 0 && typeof st.counters.bytes_sent === 'number',
      JSON.stringify(st.counters),
    );
    const br = (await api.get(`/1.0/networks/${hostBridge}/state`)).json.metadata;
    assert.equal(br.state, 'down');
    assert.equal(br.mtu, 1500);
    assert.match(br.hwaddr, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);

    expectError(await api.get('/1.0/networks/t16none'), 404);
    expectError(await api.get('/1.0/networks/t16none/state'), 404);
    expectError(await api.get('/1.0/networks/t16none/leases'), 404);
    expectError(await api.put('/1.0/networks/t16none', { config: {} }), 404);
  });

  test('bad input is refused before anything is made, naming the key or the name', async () => {
    await refused(api, { name: 't16u', config: { ...SAFE, 'ipv4.colour': 'red' } }, 400, '"ipv4.colour"');
    await refused(api, { name: 't16u', config: { ...SAFE, 'ipv4.address': '10.300.0.1/24' } }, 400, '"ipv4.address"');
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'ipv4.address': '10.218.0.0/24' } },
      400,
      '"ipv4.address"',
      'network address',
    );
    await refused(
      api,
      {
        name: 't16u',
        config: { ...SAFE, 'ipv4.address': '10.218.0.1/24', 'ipv4.dhcp.ranges': '10.219.0.2-10.219.0.9' },
      },
      400,
      '"ipv4.dhcp.ranges"',
    );
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'ipv4.address': `${hostSubnet}.9/16` } },
      400,
      '"ipv4.address"',
      `the host's subnet ${hostSubnet}.1/32`,
    );
    await refused(api, { name: 't16u', config: { ...SAFE, 'volatile.x': '1' } }, 400, '"volatile.x"');
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'bridge.mode': 'fan' } },
      400,
      '"bridge.mode"',
      'fan kernel patch',
    );
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'fan.underlay_subnet': 'auto' } },
      400,
      '"fan.underlay_subnet"',
      'fan',
    );
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'maas.subnet.ipv4': 'x' } },
      400,
      '"maas.subnet.ipv4"',
      'MAAS',
    );
    await refused(
      api,
      { name: 't16u', config: { ...SAFE, 'bridge.driver': 'openvswitch' } },
      400,
      '"bridge.driver"',
      'ovs-vsctl',
    );
    await refused(
      api,
      {
        name: 't16u',
        config: { ...SAFE, 'tunnel.g.protocol': 'gre', 'tunnel.g.local': '192.0.2.1', 'tunnel.g.remote': '192.0.2.2' },
      },
      400,
      '"tunnel.g.protocol"',
      'GRE',
    );
    await refused(api, { name: 't16u', config: { ...SAFE, 'tunnel.v.protocol': 'vxlan' } }, 400, '"tunnel.v.remote"');
    await refused(api, { name: 't16-name-too-long', config: SAFE }, 400, '15 characters');
    await refused(api, { name: 't16/x', config: SAFE }, 400, 'letters, digits');
    await refused(api, { name: 't16m', type: 'macvlan', config: SAFE }, 400, 'not supported', 'macvlan');
    await refused(api, { name: 'lo', config: SAFE }, 409, 'host interface');
    await refused(api, { name: 5 }, 400, 'name');
    await refused(api, { name: 't16u', config: ['ipv4.nat=false'] }, 400, '"config"');
    await refused(api, { name: 't16u', config: { 'ipv4.nat': { on: false } } }, 400, 'ipv4.nat');
    assert.deepEqual(
      ((await api.get('/1.0/networks?recursion=1')).json.metadata as any[]).filter((n) => n.managed),
      [],
    );
  });
});

describe('networks API: create to delete', () => {
  let d: Daemon;
  let api: Client;
  const a = `t16a${tag}`;
  const b = `t16b${tag}`;
  const r = `t16r${tag}`;
  before(async () => {
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
  });
  after(async () => {
    for (const n of [a, b, r]) await api?.delete(`/1.0/networks/${n}`).catch(() => {});
    await d?.destroy().catch(() => {});
    for (const n of [a, b, r]) await run('ip', ['link', 'delete', n]).catch(() => {});
  });

  test('create, read, update with If-Match, rename, delete, with lifecycle events', async () => {
    const sub = await subscribeEvents(d.socketPath, '?type=lifecycle');
    try {
      const made = await api.post('/1.0/networks', { name: a, description: 'sixteen', config: SAFE });
      assert.equal(made.status, 200, made.text);
      assert.equal(made.headers.location, `/1.0/networks/${a}`);
      const got = await api.get(`/1.0/networks/${a}`);
      const n = got.json.metadata;
      assert.deepEqual(
        {
          name: n.name,
          type: n.type,
          managed: n.managed,
          description: n.description,
          status: n.status,
          used_by: n.used_by,
          locations: n.locations,
        },
        {
          name: a,
          type: 'bridge',
          managed: true,
          description: 'sixteen',
          status: 'Created',
          used_by: [],
          locations: ['none'],
        },
      );
      assert.match(n.config['ipv4.address'], /^10\.\d+\.\d+\.1\/24$/, 'auto resolved');
      assert.equal(n.config['ipv4.nat'], 'false');
      const st = (await api.get(`/1.0/networks/${a}/state`)).json.metadata;
      assert.ok(
        st.addresses.some((x: any) => `${x.address}/${x.netmask}` === n.config['ipv4.address']),
        JSON.stringify(st),
      );
      assert.deepEqual((await api.get(`/1.0/networks/${a}/leases`)).json.metadata, []);
      const listed = ((await api.get('/1.0/networks?recursion=1')).json.metadata as any[]).find((x) => x.name === a);
      assert.equal(listed.managed, true);

      await refused(api, { name: a, config: SAFE }, 409, 'already exists');
      await refused(
        api,
        { name: b, config: { ...SAFE, 'ipv4.address': n.config['ipv4.address'].replace(/\.1\//, '.9/') } },
        400,
        '"ipv4.address"',
        `network "${a}"`,
      );

      const etag = got.headers.etag as string;
      const patched = await api.patch(
        `/1.0/networks/${a}`,
        { config: { 'ipv4.dhcp.expiry': '2h' } },
        { 'If-Match': etag },
      );
      assert.equal(patched.status, 200, patched.text);
      expectError(await api.put(`/1.0/networks/${a}`, { config: SAFE }, { 'If-Match': etag }), 412);
      assert.equal((await api.get(`/1.0/networks/${a}`)).json.metadata.config['ipv4.dhcp.expiry'], '2h');
      expectError(await api.patch(`/1.0/networks/${a}`, { config: { 'ipv4.dhcp.ranges': '1.2.3.4-1.2.3.5' } }), 400);

      assert.equal((await api.post('/1.0/networks', { name: b, config: SAFE })).status, 200);
      expectError(await api.post(`/1.0/networks/${a}`, { name: b }), 409);
      const renamed = await api.post(`/1.0/networks/${a}`, { name: r });
      assert.equal(renamed.status, 204, renamed.text);
      assert.equal(renamed.headers.location, `/1.0/networks/${r}`);
      expectError(await api.get(`/1.0/networks/${a}`), 404);
      assert.equal((await api.get(`/1.0/networks/${r}`)).json.metadata.description, 'sixteen');

      for (const x of [r, b]) assert.equal((await api.delete(`/1.0/networks/${x}`)).status, 200);
      expectError(await api.get(`/1.0/networks/${r}`), 404);
      await eventually(
        () => sub.events.filter((e) => String(e.metadata.action).startsWith('network-')).length >= 6,
        'six network lifecycle events',
      );
      const seen = sub.events
        .filter((e) => String(e.metadata.action).startsWith('network-'))
        .map((e) => [e.metadata.action, e.metadata.source]);
      assert.deepEqual(seen, [
        ['network-created', `/1.0/networks/${a}`],
        ['network-updated', `/1.0/networks/${a}`],
        ['network-created', `/1.0/networks/${b}`],
        ['network-renamed', `/1.0/networks/${r}`],
        ['network-deleted', `/1.0/networks/${r}`],
        ['network-deleted', `/1.0/networks/${b}`],
      ]);
      assert.equal(sub.events.find((e) => e.metadata.action === 'network-renamed').metadata.context.old_name, a);
    } finally {
      sub.close();
    }
  });

  test('a network in use cannot be deleted or renamed', async () => {
    assert.equal((await api.post('/1.0/networks', { name: a, config: SAFE })).status, 200);
    assert.equal(
      (
        await api.post('/1.0/profiles', {
          name: 't16use',
          devices: { eth0: { type: 'nic', nictype: 'bridged', parent: a } },
        })
      ).status,
      200,
    );
    assert.deepEqual((await api.get(`/1.0/networks/${a}`)).json.metadata.used_by, ['/1.0/profiles/t16use']);
    assert.match(expectError(await api.delete(`/1.0/networks/${a}`), 400), /in use.*t16use/);
    assert.match(expectError(await api.post(`/1.0/networks/${a}`, { name: r }), 400), /in use/);
    await api.delete('/1.0/profiles/t16use');
    assert.equal((await api.delete(`/1.0/networks/${a}`)).status, 200);
  });

  test('the firewall and NAT rules are in the inet svcd table, follow the config, and go with the network (rules read only; the bridge has no ports)', async () => {
    const { cidr } = await freeSubnet24(4);
    const subnet = cidr.replace(/\.1\/24$/, '.0/24');
    assert.equal(
      (await api.post('/1.0/networks', { name: b, config: safeNetworkConfig(cidr, { 'ipv4.nat': 'true' }) })).status,
      200,
    );
    const got = (await api.get(`/1.0/networks/${b}`)).json.metadata;
    assert.deepEqual(checkSpecFields('network', got), []);
    assert.deepEqual(checkSpecFields('networkState', (await api.get(`/1.0/networks/${b}/state`)).json.metadata), []);
    const rules = await svcdRuleText();
    const has = (line: string, text = rules) => assert.ok(text.includes(line), `${line}\n--- in ---\n${text}`);
    has(`iifname "${b}" meta nfproto ipv4 udp dport { 53, 67 } accept`);
    has(`iifname "${b}" meta nfproto ipv4 tcp dport 53 accept`);
    has(`iifname "${b}" meta nfproto ipv4 accept`);
    has(`ip saddr ${subnet} ip daddr != ${subnet} masquerade`);
    assert.ok(await svcdTable(), 'nft -j reads the table');
    // NAT off and the firewall off: no masquerade, no accepts for the bridge.
    assert.equal(
      (await api.patch(`/1.0/networks/${b}`, { config: { 'ipv4.nat': 'false', 'ipv4.firewall': 'false' } })).status,
      200,
    );
    const after = await svcdRuleText();
    assert.doesNotMatch(after, /masquerade/);
    assert.doesNotMatch(after, new RegExp(`"${b}"`));
    assert.equal((await api.patch(`/1.0/networks/${b}`, { config: { 'ipv4.firewall': 'true' } })).status, 200);
    assert.match(await svcdRuleText(), new RegExp(`"${b}"`));
    assert.equal((await api.delete(`/1.0/networks/${b}`)).status, 200);
    assert.doesNotMatch(await svcdRuleText(), new RegExp(`"${b}"`), 'the rules went with the network');
  });

  test('a vxlan tunnel (remote on loopback): made with its keys on the bridge, recreated when they change, removed with the key and with the network', async () => {
    const { cidr } = await freeSubnet24(5);
    const v = `t16v${tag}`;
    const port = `${v}-t`;
    /** The tunnel's link as the kernel has it (`ip -d`), or undefined. */
    const link = async () => {
      const out = await run('ip', ['-j', '-d', 'link', 'show', 'dev', port]).then(
        (r) => r.stdout,
        () => '',
      );
      return out ? (JSON.parse(out)[0] as any) : undefined;
    };
    const tunnel = {
      'tunnel.t.protocol': 'vxlan',
      'tunnel.t.local': '127.0.0.1',
      'tunnel.t.remote': '127.0.0.2',
      'tunnel.t.id': '4242',
      'tunnel.t.port': '47890',
      'tunnel.t.ttl': '3',
    };
    try {
      assert.equal((await api.post('/1.0/networks', { name: v, config: safeNetworkConfig(cidr, tunnel) })).status, 200);
      let l = await link();
      assert.ok(l, `${port} exists`);
      assert.equal(l.master, v, 'a port of the bridge');
      const info = l.linkinfo.info_data;
      assert.deepEqual(
        [l.linkinfo.info_kind, info.id, info.local, info.remote, info.port, info.ttl],
        ['vxlan', 4242, '127.0.0.1', '127.0.0.2', 47890, 3],
      );
      assert.equal(
        (await api.patch(`/1.0/networks/${v}`, { config: { 'tunnel.t.id': '4243', 'tunnel.t.ttl': '5' } })).status,
        200,
      );
      l = await link();
      assert.deepEqual(
        [l.linkinfo.info_data.id, l.linkinfo.info_data.ttl, l.master],
        [4243, 5, v],
        'recreated with the new keys, on the bridge again',
      );
      // removed behind svcd's back: the observer repairs it
      await run('ip', ['link', 'delete', 'dev', port]);
      await eventually(
        async () => (await link())?.linkinfo.info_data.id === 4243 && (await link())?.master === v,
        'the tunnel repaired',
        5000,
      );
      const cur = (await api.get(`/1.0/networks/${v}`)).json.metadata;
      const config = Object.fromEntries(
        Object.entries(cur.config as Record<string, string>).filter(([k]) => !k.startsWith('tunnel.')),
      );
      assert.equal((await api.put(`/1.0/networks/${v}`, { config, description: '' })).status, 200);
      assert.equal(await link(), undefined, 'the tunnel goes with its keys');
      assert.equal((await api.patch(`/1.0/networks/${v}`, { config: tunnel })).status, 200);
      assert.ok(await link());
      assert.equal((await api.delete(`/1.0/networks/${v}`)).status, 200);
      assert.equal(await link(), undefined, 'and with the network');
    } finally {
      await api.delete(`/1.0/networks/${v}`).catch(() => {});
      await run('ip', ['link', 'delete', 'dev', port]).catch(() => {});
      await run('ip', ['link', 'delete', 'dev', v]).catch(() => {});
    }
  });
});

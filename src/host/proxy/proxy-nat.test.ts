import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runCommand } from '../exec.ts';
import { createProxyNat, loopbackBridges, portPairs, renderProxyNat, tableIsEmpty } from './proxy-nat.ts';
import type { NatRule } from './types.ts';

const ID = '0b7c3e5e-1111-2222-3333-444455556666';
const loop: NatRule = {
  protocol: 'tcp',
  family: 4,
  listenAddress: '127.0.0.1',
  listenPorts: [8080, 8081],
  connectAddress: '10.1.2.3',
  connectPorts: [80],
  bridge: 't17br',
};
const v6: NatRule = {
  protocol: 'udp',
  family: 6,
  listenAddress: 'fd00::1',
  listenPorts: [53],
  connectAddress: 'fd00::5',
  connectPorts: [5353],
  bridge: 't17br',
};

const HEAD = `table inet svcd_proxy {}
add chain inet svcd_proxy pre_0b7c3e5e111122223333444455556666 { type nat hook prerouting priority -100; policy accept; }
flush chain inet svcd_proxy pre_0b7c3e5e111122223333444455556666
add chain inet svcd_proxy out_0b7c3e5e111122223333444455556666 { type nat hook output priority -100; policy accept; }
flush chain inet svcd_proxy out_0b7c3e5e111122223333444455556666
add chain inet svcd_proxy post_0b7c3e5e111122223333444455556666 { type nat hook postrouting priority 100; policy accept; }
flush chain inet svcd_proxy post_0b7c3e5e111122223333444455556666
`;
const GOLDEN_V6 = `${HEAD}add rule inet svcd_proxy pre_0b7c3e5e111122223333444455556666 ip6 daddr fd00::1 udp dport 53 dnat ip6 to [fd00::5]:5353
add rule inet svcd_proxy out_0b7c3e5e111122223333444455556666 ip6 daddr fd00::1 udp dport 53 dnat ip6 to [fd00::5]:5353
add rule inet svcd_proxy post_0b7c3e5e111122223333444455556666 ip6 saddr fd00::5 ip6 daddr fd00::5 udp dport 5353 masquerade
`;
const GOLDEN_NONE = `${HEAD}delete chain inet svcd_proxy pre_0b7c3e5e111122223333444455556666
delete chain inet svcd_proxy out_0b7c3e5e111122223333444455556666
delete chain inet svcd_proxy post_0b7c3e5e111122223333444455556666
`;

const nftCheck = (script: string) => runCommand('nft', ['-c', '-f', '-'], { input: script });

describe('proxy nat ruleset', () => {
  test('t17 golden: one ipv6 udp rule', async () => {
    assert.equal(renderProxyNat(ID, [v6]), GOLDEN_V6);
    await nftCheck(GOLDEN_V6);
  });
  test('t17 golden: no rules removes the chains', async () => {
    assert.equal(renderProxyNat(ID, []), GOLDEN_NONE);
    await nftCheck(GOLDEN_NONE);
  });
  test('t17 loopback listen: a dnat per port to the single connect port, masquerade of 127/8 out of the bridge', async () => {
    const s = renderProxyNat(ID, [loop]);
    for (const p of [8080, 8081])
      assert.match(s, new RegExp(`out_\\w+ ip daddr 127.0.0.1 tcp dport ${p} dnat ip to 10.1.2.3:80\\n`));
    assert.match(s, /post_\w+ oifname "t17br" ip saddr 127.0.0.0\/8 ip daddr 10.1.2.3 tcp dport 80 masquerade/);
    await nftCheck(s);
  });
  test('t17 port pairs map one to one, or all to one', () => {
    assert.deepEqual(portPairs({ ...loop, listenPorts: [1, 2], connectPorts: [11, 12] }), [
      [1, 11],
      [2, 12],
    ]);
    assert.deepEqual(portPairs(loop), [
      [8080, 80],
      [8081, 80],
    ]);
  });
});

describe('applyNat', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
  test('t17 route_localnet: turned on for a loopback listen (noted), back to 0 when no rule needs it; one set by someone else is left', async () => {
    const proc = await mkdtemp(path.join(tmpdir(), 't17nat-'));
    dirs.push(proc);
    const markerDir = path.join(proc, 'markers');
    for (const b of ['t17br', 't17b2']) await mkdir(path.join(proc, `sys/net/ipv4/conf/${b}`), { recursive: true });
    const knob = (b: string) => path.join(proc, `sys/net/ipv4/conf/${b}/route_localnet`);
    await writeFile(knob('t17br'), '0\n');
    await writeFile(knob('t17b2'), '1\n'); // an admin's
    // The table as nft would list it: the loopback masquerades of the rules applied so far.
    let live: NatRule[] = [];
    const runs: string[] = [];
    const applyNat = createProxyNat({
      procRoot: proc,
      markerDir,
      runNft: async (args, input) => {
        runs.push(args.join(' '));
        if (args[0] === '-f') assert.equal(input, renderProxyNat(ID, live));
        if (args[0] !== '-j') return '';
        const rule = (r: NatRule) => ({
          rule: {
            expr: [
              { match: { left: { meta: { key: 'oifname' } }, right: r.bridge } },
              {
                match: {
                  left: { payload: { protocol: 'ip', field: 'saddr' } },
                  right: { prefix: { addr: '127.0.0.0', len: 8 } },
                },
              },
            ],
          },
        });
        return JSON.stringify({
          nftables: [{ chain: {} }, ...live.filter((r) => r.listenAddress.startsWith('127.')).map(rule)],
        });
      },
    });
    live = [loop, { ...loop, bridge: 't17b2' }];
    await applyNat(ID, live);
    assert.equal(await readFile(knob('t17br'), 'utf8'), '1\n');
    assert.deepEqual(await readdir(markerDir), ['t17br'], 'only the bridge svcd turned it on for is noted');
    assert.deepEqual(runs, ['-f -', '-j list table inet svcd_proxy']);
    live = [
      { ...loop, listenAddress: '10.0.0.1' },
      { ...loop, bridge: 't17b2' },
    ];
    await applyNat(ID, live);
    assert.equal(await readFile(knob('t17br'), 'utf8'), '0\n', 'no loopback rule on t17br any more');
    assert.equal(await readFile(knob('t17b2'), 'utf8'), '1\n', "the admin's is left");
    assert.deepEqual(await readdir(markerDir), []);
  });

  test('t17 loopbackBridges reads the oifname of 127.0.0.0/8 masquerades from nft -j', () => {
    const json = JSON.stringify({
      nftables: [
        {
          rule: {
            expr: [
              { match: { left: { meta: { key: 'oifname' } }, right: 'brx' } },
              {
                match: {
                  left: { payload: { protocol: 'ip', field: 'saddr' } },
                  right: { prefix: { addr: '127.0.0.0', len: 8 } },
                },
              },
              { masquerade: null },
            ],
          },
        },
        { rule: { expr: [{ match: { left: { payload: { protocol: 'ip', field: 'saddr' } }, right: '10.0.0.5' } }] } },
      ],
    });
    assert.deepEqual([...loopbackBridges(json)], ['brx']);
    assert.deepEqual([...loopbackBridges('')], []);
  });

  test("t17 the last container's rules gone: the table goes; another container's chains left: it stays", async () => {
    const runs: string[] = [];
    let chains = 3;
    const applyNat = createProxyNat({
      markerDir: path.join(tmpdir(), `t17nat-none-${process.pid}`),
      runNft: async (args) => {
        runs.push(args.join(' '));
        if (args[0] === '-j')
          return JSON.stringify({
            nftables: [
              { metainfo: {} },
              { table: { family: 'inet', name: 'svcd_proxy' } },
              ...Array.from({ length: chains }, () => ({ chain: {} })),
            ],
          });
        return '';
      },
    });
    await applyNat(ID, []);
    assert.deepEqual(runs, ['-f -', '-j list table inet svcd_proxy'], 'another container has chains: the table stays');
    runs.length = 0;
    chains = 0;
    await applyNat(ID, []);
    assert.deepEqual(runs, ['-f -', '-j list table inet svcd_proxy', 'delete table inet svcd_proxy']);
    runs.length = 0;
    await applyNat(
      ID,
      [loop].map((r) => ({ ...r, listenAddress: '10.0.0.1' })),
    );
    assert.deepEqual(
      runs,
      ['-f -', '-j list table inet svcd_proxy'],
      'with rules: listed (route_localnet), not deleted',
    );
    assert.equal(tableIsEmpty(''), true);
  });
});

import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runCommand } from '../exec.ts';
import { createProxyNat, portPairs, proxyNatSysctls, renderProxyNat, tableIsEmpty } from './proxy-nat.ts';
import type { NatRule } from './types.ts';

const ID = '0b7c3e5e-1111-2222-3333-444455556666';
const loop: NatRule = { protocol: 'tcp', family: 4, listenAddress: '127.0.0.1', listenPorts: [8080, 8081], connectAddress: '10.1.2.3', connectPorts: [80], bridge: 't17br' };
const v6: NatRule = { protocol: 'udp', family: 6, listenAddress: 'fd00::1', listenPorts: [53], connectAddress: 'fd00::5', connectPorts: [5353], bridge: 't17br' };

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
    for (const p of [8080, 8081]) assert.match(s, new RegExp(`out_\\w+ ip daddr 127.0.0.1 tcp dport ${p} dnat ip to 10.1.2.3:80\\n`));
    assert.match(s, /post_\w+ oifname "t17br" ip saddr 127.0.0.0\/8 ip daddr 10.1.2.3 tcp dport 80 masquerade/);
    await nftCheck(s);
  });
  test('t17 port pairs map one to one, or all to one', () => {
    assert.deepEqual(portPairs({ ...loop, listenPorts: [1, 2], connectPorts: [11, 12] }), [[1, 11], [2, 12]]);
    assert.deepEqual(portPairs(loop), [[8080, 80], [8081, 80]]);
  });
  test('t17 route_localnet only for loopback ipv4 listens', () => {
    assert.deepEqual(proxyNatSysctls([loop, v6, { ...loop, listenAddress: '192.0.2.1' }]), ['net/ipv4/conf/t17br/route_localnet']);
  });
});

describe('applyNat', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
  test('t17 writes the sysctls, then runs nft -f - with the script', async () => {
    const proc = await mkdtemp(path.join(tmpdir(), 't17nat-'));
    dirs.push(proc);
    await mkdir(path.join(proc, 'sys/net/ipv4/conf/t17br'), { recursive: true });
    const runs: [readonly string[], string][] = [];
    const applyNat = createProxyNat({ procRoot: proc, runNft: async (args, input) => void runs.push([args, input]) });
    await applyNat(ID, [loop]);
    assert.equal(await readFile(path.join(proc, 'sys/net/ipv4/conf/t17br/route_localnet'), 'utf8'), '1\n');
    assert.deepEqual(runs, [[['-f', '-'], renderProxyNat(ID, [loop])]]);
  });

  test('t17 the last container\'s rules gone: the table goes; another container\'s chains left: it stays', async () => {
    const runs: string[] = [];
    let chains = 3;
    const applyNat = createProxyNat({
      runNft: async (args) => {
        runs.push(args.join(' '));
        if (args[0] === '-j') return JSON.stringify({ nftables: [{ metainfo: {} }, { table: { family: 'inet', name: 'svcd_proxy' } }, ...Array.from({ length: chains }, () => ({ chain: {} }))] });
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
    await applyNat(ID, [loop].map((r) => ({ ...r, listenAddress: '10.0.0.1' })));
    assert.deepEqual(runs, ['-f -'], 'with rules: nothing listed or deleted');
    assert.equal(tableIsEmpty(''), true);
  });
});

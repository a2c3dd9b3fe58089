/**
 * createNetworkAdapter on the real host: a test bridge (NAT off, routing off, no IPv6) with dnsmasq,
 * a veth into a test netns where busybox udhcpc takes leases and nslookup asks the bridge's dnsmasq,
 * svcd's nft table, repair from partial state, and removal. Traffic stays on the test's own bridge.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { createNetworkAdapter } from '../../src/host/network/network-adapter.ts';
import { createNetworkHost } from '../../src/host/network/network-host.ts';
import { dnsmasqFiles } from '../../src/host/network/render-dnsmasq-conf.ts';
import { familySpec, networkSpec } from '../../src/host/network/test-specs.ts';
import type { NetworkSpec } from '../../src/host/network/types.ts';

const skip = process.getuid?.() !== 0 ? 'needs root' : false;
const tag = process.pid % 100000;
const BR = `t16a${tag}`;
const NS = `t16n${tag}`;
const VETH = `t16v${tag}`;
const MAC_DYN = '00:16:3e:16:00:0a';
const MAC_STATIC = '00:16:3e:16:00:0b';

const ns = (...args: string[]) => runCommand('ip', ['netns', 'exec', NS, ...args], { timeoutMs: 30_000 });
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** Every live dnsmasq whose command line names this conf file. */
async function dnsmasqPids(conf: string): Promise<number[]> {
  const out: number[] = [];
  for (const line of (await runCommand('pgrep', ['-f', '-x', `dnsmasq --conf-file=${conf}`]).catch(() => '')).split(
    '\n',
  ))
    if (/^\d+$/.test(line)) out.push(Number(line));
  return out;
}

describe('network adapter on the real host', { skip }, () => {
  const adapter = createNetworkAdapter();
  const host = createNetworkHost();
  let root: string;
  let spec: NetworkSpec;
  let prefix: string;
  let script: string;

  /** udhcpc in the netns with this MAC; resolves with the address it was offered. */
  async function dhcp(mac: string): Promise<string> {
    await ns('ip', 'link', 'set', 'eth0', 'down');
    await ns('ip', 'addr', 'flush', 'dev', 'eth0');
    await ns('ip', 'link', 'set', 'eth0', 'address', mac, 'up');
    const out = await ns('busybox', 'udhcpc', '-i', 'eth0', '-n', '-q', '-f', '-t', '10', '-T', '1', '-s', script);
    const m = /lease=(\S+)/.exec(out);
    assert.ok(m, out);
    return m[1]!;
  }

  before(async () => {
    const used = await host.usedSubnets();
    const third = [...Array(200).keys()]
      .map((i) => ((tag + i) % 200) + 20)
      .find(
        (y) =>
          !used.some(
            (c) => c.startsWith(`10.216.${y}.`) || c.startsWith('10.0.0.0/8') || c.startsWith('10.216.0.0/16'),
          ),
      );
    assert.ok(third !== undefined, 'a free /24');
    prefix = `10.216.${third}`;
    root = await mkdtemp(path.join(os.tmpdir(), 'svcd-netad-'));
    await chmod(root, 0o755);
    script = path.join(root, 'udhcpc.sh');
    await writeFile(script, '#!/bin/sh\n[ "$1" = bound ] && echo "lease=$ip"\nexit 0\n', { mode: 0o755 });
    spec = networkSpec(BR, path.join(root, 'networks', BR), {
      ipv4: familySpec(`${prefix}.1`, 24, `${prefix}.0/24`, {
        dhcpRanges: [{ start: `${prefix}.100`, end: `${prefix}.150` }],
      }),
      dns: { domain: 't16.test', mode: 'managed' },
    });
  });

  after(async () => {
    await runCommand('ip', ['netns', 'delete', NS]).catch(() => {});
    await runCommand('ip', ['link', 'delete', VETH]).catch(() => {});
    for (const pid of await dnsmasqPids(dnsmasqFiles(spec.dir).conf)) process.kill(pid, 'SIGKILL');
    await runCommand('ip', ['link', 'delete', BR]).catch(() => {});
    await runCommand('nft', ['delete', 'table', 'inet', 'svcd']).catch(() => {});
    await rm(root, { recursive: true, force: true });
  });

  it('creates the bridge with its address and one dnsmasq; a second converge changes nothing', async () => {
    await adapter.ensureNetwork(spec);
    const state = await host.state(BR);
    assert.equal(state?.hwaddr, spec.hwaddr);
    assert.ok(state?.addresses.some((a) => a.address === `${prefix}.1` && a.netmask === '24'));
    const pids = await dnsmasqPids(dnsmasqFiles(spec.dir).conf);
    assert.equal(pids.length, 1);
    assert.equal(await adapter.health(spec), undefined);
    await adapter.ensureNetwork(spec);
    assert.deepEqual(await dnsmasqPids(dnsmasqFiles(spec.dir).conf), pids, 'dnsmasq kept');
    const conf = await readFile(dnsmasqFiles(spec.dir).conf, 'utf8');
    assert.ok(conf.includes('no-resolv') && !/^server=/m.test(conf));
  });

  it('a netns on the bridge gets a dynamic lease, then its static address, and resolves its name', async () => {
    await runCommand('ip', ['netns', 'add', NS]);
    await runCommand('ip', ['link', 'add', VETH, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', NS]);
    await runCommand('ip', ['link', 'set', 'dev', VETH, 'master', BR, 'up']);
    const dyn = await dhcp(MAC_DYN);
    const last = Number(dyn.split('.')[3]);
    assert.ok(dyn.startsWith(`${prefix}.`) && last >= 100 && last <= 150, dyn);
    const leases = await host.leases({ name: BR, dir: spec.dir });
    assert.ok(
      leases.some((l) => l.hwaddr === MAC_DYN && l.address === dyn && l.type === 'dynamic'),
      JSON.stringify(leases),
    );

    await adapter.setDhcpHost(spec, 'c1id.eth0', { hwaddr: MAC_STATIC, hostname: 'c1', ipv4: `${prefix}.20` });
    assert.equal(await dhcp(MAC_STATIC), `${prefix}.20`);
    await ns('ip', 'addr', 'add', `${prefix}.20/24`, 'dev', 'eth0');
    const answer = await ns('busybox', 'nslookup', 'c1.t16.test', `${prefix}.1`);
    assert.match(answer, new RegExp(`Address:?\\s+(1: )?${prefix.replace(/\./g, '\\.')}\\.20`), answer);

    await adapter.pruneDhcpHosts(spec, new Set());
    assert.equal(await exists(path.join(dnsmasqFiles(spec.dir).hostsDir, 'c1id.eth0')), false);
  });

  it('puts the firewall and NAT rules in the inet svcd table, repairs a stale rule, and removes the table', async () => {
    await adapter.applyFirewall([spec]);
    const listing = JSON.stringify(JSON.parse(await runCommand('nft', ['-j', 'list', 'table', 'inet', 'svcd'])));
    assert.ok(listing.includes(`"${BR}"`) && listing.includes('"dport"'), listing);
    assert.ok(!listing.includes('masquerade'));
    // NAT is only read, never exercised: the netns has no route out
    const natSpec = { ...spec, ipv4: { ...spec.ipv4!, nat: true } };
    await adapter.applyFirewall([natSpec]);
    assert.ok((await runCommand('nft', ['-j', 'list', 'table', 'inet', 'svcd'])).includes('masquerade'));
    await runCommand('nft', ['add', 'rule', 'inet', 'svcd', 'forward', 'iifname', 't16zz', 'counter', 'accept']);
    await adapter.applyFirewall([natSpec]);
    assert.ok(!(await runCommand('nft', ['list', 'table', 'inet', 'svcd'])).includes('t16zz'), 'stale rule gone');
    await adapter.applyFirewall([]);
    await assert.rejects(runCommand('nft', ['list', 'table', 'inet', 'svcd']));
  });

  it('repairs a deleted bridge, a killed dnsmasq, an orphan dnsmasq and a stray address', async () => {
    const conf = dnsmasqFiles(spec.dir).conf;
    await runCommand('ip', ['link', 'delete', BR]);
    assert.equal(await adapter.health(spec), `bridge ${BR} is missing`);
    await adapter.ensureNetwork(spec);
    assert.equal(await adapter.health(spec), undefined);
    assert.equal((await dnsmasqPids(conf)).length, 1);

    for (const pid of await dnsmasqPids(conf)) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    assert.match((await adapter.health(spec)) ?? '', /dnsmasq/);
    await adapter.ensureNetwork(spec);
    assert.equal((await dnsmasqPids(conf)).length, 1);

    await unlink(dnsmasqFiles(spec.dir).pid); // the running one is now an orphan
    await adapter.ensureNetwork(spec);
    assert.equal((await dnsmasqPids(conf)).length, 1, 'the orphan was replaced, not doubled');

    await runCommand('ip', ['addr', 'add', `${prefix}.77/24`, 'dev', BR]);
    await adapter.ensureNetwork(spec);
    assert.ok(!(await host.state(BR))?.addresses.some((a) => a.address === `${prefix}.77`));
    // the netns still gets its lease from the repaired network
    await runCommand('ip', ['link', 'set', 'dev', VETH, 'master', BR, 'up']);
    assert.ok((await dhcp(MAC_DYN)).startsWith(`${prefix}.`));
  });

  it('removeNetwork leaves no bridge, no dnsmasq and no directory, and may run again', async () => {
    const conf = dnsmasqFiles(spec.dir).conf;
    await adapter.removeNetwork(BR, spec.dir);
    assert.equal(await host.state(BR), undefined);
    assert.deepEqual(await dnsmasqPids(conf), []);
    assert.equal(await exists(spec.dir), false);
    await adapter.removeNetwork(BR, spec.dir);
  });

  it('refuses, naming it, a host interface of another kind holding the name or another interface holding the subnet, and leaves both alone', async () => {
    await runCommand('ip', ['link', 'add', BR, 'type', 'veth', 'peer', 'name', `${BR}p`]);
    try {
      await assert.rejects(
        adapter.ensureNetwork(spec),
        new RegExp(`host interface "${BR}" exists and is not a bridge`),
      );
      assert.ok(
        (await host.interfaces()).some((i) => i.name === BR),
        'the veth is still there',
      );
      // The veth takes the subnet: a network on it is refused while the veth has it.
      await runCommand('ip', ['addr', 'add', `${prefix}.200/24`, 'dev', BR]);
      await runCommand('ip', ['link', 'set', BR, 'up']);
      const other = { ...spec, name: `${BR}x`, dir: `${spec.dir}x` };
      await assert.rejects(
        adapter.ensureNetwork(other),
        new RegExp(`subnet ${prefix}.0/24 is already used by host interface "${BR}"`),
      );
      assert.equal(await host.state(other.name), undefined, 'no bridge made');
    } finally {
      await runCommand('ip', ['link', 'delete', BR]).catch(() => {});
    }
  });
});

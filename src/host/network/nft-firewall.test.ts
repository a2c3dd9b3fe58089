import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pruneDhcpHostFiles, writeDhcpHost } from './dhcp-hosts.ts';
import { createNftFirewall } from './nft-firewall.ts';
import { networkSpec } from './test-specs.ts';

test('applyFirewall: applies once, skips while the listing is unchanged, re-applies on drift', async () => {
  const applied: string[] = [];
  let listing = 'table A';
  const apply = createNftFirewall(async (args, input) => {
    if (args[0] === '-f') applied.push(input!);
    return args[0] === 'list' ? listing : '';
  });
  const specs = [networkSpec('br0', '/s/br0')];
  await apply(specs);
  await apply(specs);
  assert.equal(applied.length, 1);
  listing = 'table A with a stale rule';
  await apply(specs);
  assert.equal(applied.length, 2);
  await apply([]);
  assert.equal(applied.length, 3);
  assert.equal(applied[2], 'table inet svcd {}\ndelete table inet svcd\n');
});

test('DHCP host files: written only on change, removed, pruned; bad keys refused', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-dhcphosts-'));
  try {
    const e = { hwaddr: '00:16:3e:00:00:01', hostname: 'c1', ipv4: '10.0.0.5' };
    assert.equal(await writeDhcpHost(dir, 'id1.eth0', e), true);
    assert.equal(await writeDhcpHost(dir, 'id1.eth0', e), false);
    assert.equal(await readFile(path.join(dir, 'dnsmasq.hosts/id1.eth0'), 'utf8'), '00:16:3e:00:00:01,10.0.0.5,c1\n');
    assert.equal(await writeDhcpHost(dir, 'id2.eth0', { ...e, ipv4: undefined }), true);
    assert.equal(await writeDhcpHost(dir, 'id2.eth0', undefined), true);
    assert.equal(await writeDhcpHost(dir, 'id2.eth0', undefined), false);
    await writeDhcpHost(dir, 'id3.eth1', e);
    assert.equal(await pruneDhcpHostFiles(dir, new Set(['id1.eth0'])), true);
    assert.equal(await pruneDhcpHostFiles(dir, new Set(['id1.eth0'])), false);
    assert.deepEqual(await readdir(path.join(dir, 'dnsmasq.hosts')), ['id1.eth0']);
    await assert.rejects(writeDhcpHost(dir, '../x', e), /bad DHCP host key/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

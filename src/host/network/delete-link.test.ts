import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { deleteLinkIfPresent } from './converge-bridge.ts';

/** A fake /sys with one link (its flags file is what readLinkFacts needs to see it). */
async function fakeSys(link: string) {
  const sysRoot = await mkdtemp(path.join(os.tmpdir(), 'svcd-sys-'));
  const dir = path.join(sysRoot, 'class/net', link);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'flags'), '0x1003\n');
  await writeFile(path.join(dir, 'address'), '00:16:3e:00:00:01\n');
  await writeFile(path.join(dir, 'mtu'), '1500\n');
  return { sysRoot, dir };
}

test('a link is deleted with ip; an absent one runs nothing', async () => {
  const { sysRoot, dir } = await fakeSys('br0');
  const calls: string[][] = [];
  const ip = async (args: readonly string[]) => {
    calls.push([...args]);
    await rm(dir, { recursive: true });
  };
  await deleteLinkIfPresent({ sysRoot }, ip, 'br0');
  assert.deepEqual(calls, [['link', 'delete', 'dev', 'br0']]);
  await deleteLinkIfPresent({ sysRoot }, ip, 'br0');
  assert.equal(calls.length, 1);
  await rm(sysRoot, { recursive: true });
});

test('a link removed by someone else between the look and the delete is gone as wanted', async () => {
  const { sysRoot, dir } = await fakeSys('br1');
  const ip = async () => {
    await rm(dir, { recursive: true });
    throw new Error('Cannot find device "br1"');
  };
  await deleteLinkIfPresent({ sysRoot }, ip, 'br1');
  await rm(sysRoot, { recursive: true });
});

test('a failed delete of a link still there is an error', async () => {
  const { sysRoot } = await fakeSys('br2');
  const ip = async () => {
    throw new Error('Operation not permitted');
  };
  await assert.rejects(deleteLinkIfPresent({ sysRoot }, ip, 'br2'), /Operation not permitted/);
  await rm(sysRoot, { recursive: true });
});

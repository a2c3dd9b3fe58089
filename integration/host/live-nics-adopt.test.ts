/**
 * adoptNic on the real host: a "container" (a process in a network namespace the test creates) whose
 * eth0 is one end of a veth pair with an LXC-style host name on a bridge the test creates (no address,
 * no traffic). Adopted: the host side renamed to the stable name, still on its bridge and up; its MAC
 * returned. Not a veth (lo) or absent: undefined, nothing renamed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/host/exec.ts';
import { adoptNic } from '../../src/host/lxc/live-nics.ts';

const skip = process.getuid?.() !== 0 ? 'needs root' : false;
const tag = process.pid % 100000;
const BR = `t16ab${tag}`;
const LXC_NAME = `vethT${tag}`;
const STABLE = `vethS${tag}`;

describe('adopting a running container veth under its stable name', { skip }, () => {
  let ns: ChildProcess;
  before(async () => {
    ns = spawn('unshare', ['--net', 'sleep', '600'], { stdio: 'ignore' });
    // wait until the child is in its own network namespace
    for (let i = 0; i < 50; i++) {
      const [mine, its] = await Promise.all([
        readlink('/proc/self/ns/net'),
        readlink(`/proc/${ns.pid}/ns/net`).catch(() => ''),
      ]);
      if (its && its !== mine) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await runCommand('ip', ['link', 'add', BR, 'type', 'bridge']);
    await runCommand('ip', [
      'link',
      'add',
      LXC_NAME,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'address',
      '00:16:3e:16:ad:01',
      'netns',
      String(ns.pid),
    ]);
    await runCommand('ip', ['link', 'set', LXC_NAME, 'master', BR, 'up']);
  });
  after(async () => {
    ns?.kill('SIGKILL');
    for (const n of [LXC_NAME, STABLE, BR]) await runCommand('ip', ['link', 'delete', n]).catch(() => {});
  });

  it('renames the host side, keeps it on its bridge and up, and returns the MAC and MTU', async () => {
    const found = await adoptNic(ns.pid!, { hostName: STABLE, name: 'eth0' });
    assert.deepEqual(found, { hwaddr: '00:16:3e:16:ad:01', mtu: 1500 });
    const dir = path.join('/sys/class/net', STABLE);
    assert.equal(path.basename(await readlink(path.join(dir, 'master'))), BR);
    assert.equal(parseInt(await readFile(path.join(dir, 'flags'), 'utf8'), 16) & 1, 1, 'IFF_UP');
    await assert.rejects(readlink(path.join('/sys/class/net', LXC_NAME)), 'the LXC name is gone');
    // again: already under its name, nothing to do
    assert.deepEqual(await adoptNic(ns.pid!, { hostName: STABLE, name: 'eth0' }), found);
  });

  it('answers undefined for an interface that is not a veth, or absent', async () => {
    assert.equal(await adoptNic(ns.pid!, { hostName: `vethX${tag}`, name: 'lo' }), undefined);
    assert.equal(await adoptNic(ns.pid!, { hostName: `vethX${tag}`, name: 'eth9' }), undefined);
    await assert.rejects(readlink(path.join('/sys/class/net', `vethX${tag}`)));
  });
});

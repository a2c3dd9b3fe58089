/**
 * reclaimPhysical on the real kernel: an interface that came back to the host under another name (as a
 * physical nic does when the container it was moved into dies) is found by its ifindex and gets its own
 * name, MAC and MTU again. The test's own veth pair stands in for it (no traffic is sent).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { reclaimPhysical } from '../../src/host/lxc/live-nic-types.ts';

const run = promisify(execFile);
const sfx = String(process.pid % 100000);
const inside = `t17ri${sfx}`;
const own = `t17ro${sfx}`;
const peer = `t17rp${sfx}`;
const sys = (name: string, f: string) => readFile(`/sys/class/net/${name}/${f}`, 'utf8').then((s) => s.trim());

after(async () => {
  for (const n of [inside, own]) await run('ip', ['link', 'del', n]).catch(() => undefined);
});

test('t17 a physical interface back under its inside name is renamed to its own, with its MAC and MTU', async () => {
  await run('ip', ['link', 'add', inside, 'type', 'veth', 'peer', 'name', peer]);
  const ifindex = Number(await sys(inside, 'ifindex'));
  const was = { hwaddr: '02:00:00:00:17:01', mtu: 1400, ifindex };
  await reclaimPhysical(own, was);
  assert.equal(Number(await sys(own, 'ifindex')), ifindex, 'the same interface, under its own name');
  assert.equal(await sys(own, 'address'), was.hwaddr);
  assert.equal(await sys(own, 'mtu'), '1400');
  await assert.rejects(sys(inside, 'ifindex'), 'no longer under the inside name');
  // Its name back already, or nothing with that ifindex: nothing to do.
  await reclaimPhysical(own, { ...was, mtu: 1300 });
  assert.equal(await sys(own, 'mtu'), '1400');
  await reclaimPhysical(`t17rn${sfx}`, { ...was, ifindex: 999_999 });
  await assert.rejects(sys(`t17rn${sfx}`, 'ifindex'));
});

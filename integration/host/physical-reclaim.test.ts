/**
 * reclaimPhysical on the real kernel: an interface that came back to the host under another name (as a
 * physical nic does when the container it was moved into dies) is found by its ifindex and gets its own
 * name, MAC and MTU again; one back under its own name (as LXC gives back what it moved in at a start)
 * gets its MAC and MTU again. The test's own veth pair stands in for it (no traffic is sent).
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
  // As it was: nothing to do. Nothing with that ifindex: false (not back, or gone).
  assert.equal(await reclaimPhysical(own, was), true);
  assert.equal(await reclaimPhysical(`t17rn${sfx}`, { ...was, ifindex: 999_999 }), false);
  await assert.rejects(sys(`t17rn${sfx}`, 'ifindex'));
});

test('t17 a physical interface back under its own name with the MAC and MTU a container gave it gets its own again, up if it was', async () => {
  // As LXC gives back what it moved in at a start: its name, the config's MAC and MTU.
  const ifindex = Number(await sys(own, 'ifindex'));
  await run('ip', ['link', 'set', 'dev', own, 'address', '02:00:00:00:17:99', 'mtu', '1300', 'up']);
  const was = { hwaddr: '02:00:00:00:17:01', mtu: 1400, ifindex };
  assert.equal(await reclaimPhysical(own, was), true);
  assert.deepEqual(
    [await sys(own, 'address'), await sys(own, 'mtu'), (Number(await sys(own, 'flags')) & 1) === 1],
    ['02:00:00:00:17:01', '1400', true],
  );
  // Another interface under its name: left alone.
  await run('ip', ['link', 'set', 'dev', own, 'mtu', '1300']);
  assert.equal(await reclaimPhysical(own, { ...was, ifindex: ifindex + 100_000 }), true);
  assert.equal(await sys(own, 'mtu'), '1300');
});

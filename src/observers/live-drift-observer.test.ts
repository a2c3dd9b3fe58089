import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLiveRegistry } from '../reconcilers/container/ensure-live.ts';
import { createLiveDriftObserver, missingNics } from './live-drift-observer.ts';
import { createLiveLookAdapter } from '../host/lxc/observer-adapters.ts';

const look = createLiveLookAdapter();

// This process's own network namespace stands for a container's: it has `lo`, and /sys/class/net/lo.
test('t17 nic drift: a name inside or a host-side veth that is gone is reported; a gone process lacks none', async () => {
  assert.deepEqual(await missingNics(look, process.pid, { inside: ['lo'], veths: ['lo'] }), []);
  assert.deepEqual(await missingNics(look, process.pid, { inside: ['lo', 't17nomv'], veths: ['t17noveth'] }), [
    't17nomv',
    't17noveth',
  ]);
  assert.deepEqual(await missingNics(look, process.pid, undefined), []);
  assert.deepEqual(await missingNics(look, 2 ** 22 + 7, { inside: ['eth0'], veths: [] }), []);

  const live = createLiveRegistry();
  live.set('c1', {
    pid: process.pid,
    cgroup: {},
    mounts: {},
    pendingRestart: [],
    nics: { inside: ['t17gone'], veths: [] },
  });
  live.set('c2', { pid: process.pid, cgroup: {}, mounts: {}, pendingRestart: [], nics: { inside: ['lo'], veths: [] } });
  const reports: string[][] = [];
  const obs = createLiveDriftObserver({
    live,
    look,
    report: (kind, key, what) => void reports.push([kind, key, what]),
  });
  await obs.sample(new AbortController().signal);
  assert.deepEqual(reports, [['container', 'c1', 'nic t17gone missing']]);
});

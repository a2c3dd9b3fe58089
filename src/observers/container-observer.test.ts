import assert from 'node:assert/strict';
import { createInitExitAdapter } from '../host/lxc/observer-adapters.ts';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { useTempDatabase } from '../db/temp-database.ts';
import { ensureDefaultProject } from '../desired/projects.ts';
import { containers } from '../desired/schema/index.ts';
import { createEventBus } from '../events/index.ts';
import { stopSpawnHelper } from '../host/spawn/spawn-helper.ts';
import { createManualClock } from '../reconcilers/runtime/clock.ts';
import { createLxcAdapter } from '../host/lxc/lxc-adapter.ts';
import { createContainerObserver } from './container-observer.ts';

const temp = useTempDatabase('svcd-observer-', ensureDefaultProject);
let stateDir: string;
before(async () => (stateDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-observer-state-'))));
after(async () => {
  stopSpawnHelper();
  await rm(stateDir, { recursive: true, force: true });
});

test('a crash loop: killed at once again after each start, the start again is scheduled at 0, 1, 2, 4 s (not left to the next poll)', async () => {
  const { db } = temp.database;
  const clock = createManualClock(1_700_000_000_000);
  const id = randomUUID();
  await db.insert(containers).values({
    id,
    project: 'default',
    name: `loop-${id.slice(0, 8)}`,
    architecture: 'x86_64',
    source: { type: 'none' },
    power: 'running',
    location: 'test',
  });
  const now: string[] = [];
  const later: [number, string][] = [];
  const observer = createContainerObserver({
    db,
    localWrites: temp.database.localWrites,
    node: 'test',
    lxc: createLxcAdapter(),
    lxcPath: path.join(stateDir, 'containers'),
    initExit: createInitExitAdapter(),
    stateDir,
    bus: createEventBus({ location: 'test' }),
    report: (_kind, key, what) => key === id && now.push(what),
    reportAfter: (_kind, key, delayMs, what) => key === id && later.push([delayMs, what]),
    now: clock.now,
  });

  let pid = 1000;
  // Started by svcd (as a reconcile reports it), up for 2 s, then killed behind svcd's back.
  const runAndKill = async () => {
    await observer.observe(id, { state: 'RUNNING', pid: ++pid });
    await clock.advance(2_000);
    await observer.observe(id, { state: 'STOPPED' });
  };
  await runAndKill();
  assert.equal(now.length, 1, `the first kill: started again at once (${now.join('; ')})`);
  assert.match(now[0]!, /observed STOPPED, desired running/);
  assert.deepEqual(later, []);

  for (const delay of [1_000, 2_000, 4_000]) {
    await runAndKill();
    assert.equal(now.length, 1, 'no report at once');
    assert.equal(later.at(-1)?.[0], delay, `scheduled after ${delay} ms`);
    assert.match(later.at(-1)![1], /crash loop backoff/);
    // A look during the backoff (a poll, an event) does not start it early.
    await observer.observe(id, { state: 'STOPPED' });
    assert.equal(now.length, 1);
  }
  assert.equal(later.length, 3);
});

test('a container desired running that never came up (its start keeps failing) is reported once, not at every sample', async () => {
  const { db } = temp.database;
  const id = randomUUID();
  await db.insert(containers).values({
    id,
    project: 'default',
    name: `never-${id.slice(0, 8)}`,
    architecture: 'x86_64',
    source: { type: 'none' },
    power: 'running',
    location: 'test',
  });
  const reports: string[] = [];
  const observer = createContainerObserver({
    db,
    localWrites: temp.database.localWrites,
    node: 'test',
    // LXC lists nothing: the container never started.
    lxc: { state: async () => ({ state: 'STOPPED' }), list: async () => [] },
    lxcPath: path.join(stateDir, 'containers'),
    initExit: createInitExitAdapter(),
    stateDir,
    bus: createEventBus({ location: 'test' }),
    report: (_kind, key, what) => key === id && reports.push(what),
    reportAfter: () => assert.fail('no backoff expected'),
  });
  for (let i = 0; i < 4; i++) await observer.sample(new AbortController().signal);
  assert.deepEqual(reports, ['observed STOPPED, desired running']);
  // Seen up and then gone again is a change: reported (as a stop behind svcd's back).
  await observer.observe(id, { state: 'RUNNING', pid: 4242 });
  await observer.observe(id, { state: 'STOPPED' });
  assert.equal(reports.length, 2, reports.join('; '));
});

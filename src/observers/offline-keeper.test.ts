import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { InitExit } from '../host/lxc/init-exit.ts';
import type { LxcState } from '../host/lxc/lxc-args.ts';
import { createOfflineKeeper } from './offline-keeper.ts';

/** A host of containers in memory, a database that answers or not, and a clock moved by hand. */
function harness() {
  const host = new Map<string, { state: LxcState; pid: number }>();
  const calls: string[] = [];
  const exits = new Map<number, InitExit>();
  let reachable = true;
  let probes = 0;
  let backs = 0;
  let t = 1_000_000;
  let nextPid = 100;
  const keeper = createOfflineKeeper({
    lxcPath: '/lxc',
    now: () => t,
    graceMs: 2_000,
    lxc: {
      async list(_path, _signal, names) {
        return (names ?? [...host.keys()]).flatMap((name) => {
          const s = host.get(name);
          return s ? [{ name, state: s.state, ...(s.pid ? { pid: s.pid } : {}) }] : [];
        });
      },
      async start(input) {
        calls.push(`start ${input.name} ${input.configFile}`);
        const pid = nextPid++;
        host.set(input.name, { state: 'RUNNING', pid });
        return { state: 'RUNNING', pid };
      },
      async stop(input) {
        calls.push(`stop ${input.name}`);
        host.set(input.name, { state: 'STOPPED', pid: 0 });
        return { forced: false };
      },
      async freeze(ref) {
        calls.push(`freeze ${ref.name}`);
        host.get(ref.name)!.state = 'FROZEN';
      },
      async unfreeze(ref) {
        calls.push(`unfreeze ${ref.name}`);
        host.get(ref.name)!.state = 'RUNNING';
      },
    },
    containerFiles: { resetLog: async () => {} },
    initExit: { readInitExit: async (_f, pid) => exits.get(pid ?? 0) ?? { kind: 'unknown' } },
    probe: async () => {
      probes++;
      return reachable;
    },
    onBack: () => backs++,
  });
  const files = (id: string) => ({
    configFile: `/lxc/${id}/config`,
    logFile: `/log/${id}`,
    consoleLogFile: `/log/${id}.c`,
  });
  /** One look, and the actions it started. */
  const look = async (advanceMs = 1_000) => {
    t += advanceMs;
    await keeper.sample(new AbortController().signal);
    await new Promise((r) => setImmediate(r));
  };
  const kill = (id: string, signal = 9) => {
    exits.set(host.get(id)!.pid, { kind: 'signal', signal, name: '' });
    host.set(id, { state: 'STOPPED', pid: 0 });
  };
  return {
    host,
    calls,
    keeper,
    files,
    look,
    kill,
    setReachable: (r: boolean) => (reachable = r),
    probes: () => probes,
    backs: () => backs,
  };
}

test('while the database answers, the keeper only asks it, once a disagreement has lasted its grace', async () => {
  const h = harness();
  h.host.set('c1', { state: 'RUNNING', pid: 10 });
  h.keeper.remember({ id: 'c1', name: 'one', power: 'running' }, h.files('c1'));
  await h.look();
  h.kill('c1');
  await h.look(); // drift seen
  assert.equal(h.probes(), 0, 'no question before the grace');
  await h.look(2_000);
  assert.equal(h.probes(), 1);
  await h.look(500);
  assert.equal(h.probes(), 1, 'at most one question per grace');
  assert.deepEqual(h.calls, [], 'the reconcilers are in charge while the database answers');
  assert.equal(h.keeper.offline, false);
});

test('offline: a killed container is started again from its config, a second early death waits its backoff', async () => {
  const h = harness();
  h.host.set('c1', { state: 'RUNNING', pid: 10 });
  h.keeper.remember({ id: 'c1', name: 'one', power: 'running' }, h.files('c1'));
  await h.look();
  h.setReachable(false);
  h.kill('c1');
  await h.look();
  await h.look(2_000);
  assert.equal(h.keeper.offline, true);
  assert.deepEqual(h.calls, ['start c1 /lxc/c1/config']);
  assert.equal(h.host.get('c1')!.state, 'RUNNING');
  // Killed again within a minute of its start: the crash loop backoff (1 s) first.
  await h.look();
  h.kill('c1');
  await h.look(100);
  assert.equal(h.calls.length, 1, 'not at once the second time');
  await h.look(1_500);
  assert.deepEqual(h.calls, ['start c1 /lxc/c1/config', 'start c1 /lxc/c1/config']);
  // The database back: the reconcilers take over, once.
  h.setReachable(true);
  await h.look();
  await h.look();
  assert.equal(h.keeper.offline, false);
  assert.equal(h.backs(), 1);
});

test('offline: powered off from inside stays off; desired stopped is stopped; frozen is frozen; unknown files are left', async () => {
  const h = harness();
  h.host.set('off', { state: 'RUNNING', pid: 10 });
  h.host.set('idle', { state: 'STOPPED', pid: 0 });
  h.host.set('ice', { state: 'RUNNING', pid: 12 });
  h.host.set('new', { state: 'STOPPED', pid: 0 });
  h.keeper.remember({ id: 'off', name: 'off', power: 'running' }, h.files('off'));
  h.keeper.remember({ id: 'idle', name: 'idle', power: 'stopped' }, h.files('idle'));
  h.keeper.remember({ id: 'ice', name: 'ice', power: 'frozen' }, h.files('ice'));
  // Read but its config never written by this process: nothing to start it from.
  h.keeper.remember({ id: 'new', name: 'new', power: 'running' });
  await h.look();
  h.setReachable(false);
  h.kill('off', 2);
  h.host.set('idle', { state: 'RUNNING', pid: 11 });
  await h.look();
  await h.look(2_000);
  assert.deepEqual(h.calls.sort(), ['freeze ice', 'stop idle']);
  await h.look(5_000);
  assert.equal(h.host.get('off')!.state, 'STOPPED', 'a power-off from inside is the owner’s');
  assert.equal(h.host.get('new')!.state, 'STOPPED');
  // Desired running again (a reconcile read it before the database went away): started.
  h.keeper.remember({ id: 'off', name: 'off', power: 'running' });
  h.keeper.remember({ id: 'off', name: 'off', power: 'stopped' });
  h.keeper.remember({ id: 'off', name: 'off', power: 'running' });
  await h.look();
  assert.ok(h.calls.includes('start off /lxc/off/config'), h.calls.join(', '));
  // Forgotten (deleted, moved to another member): never touched again.
  h.keeper.forget('idle');
  h.host.set('idle', { state: 'RUNNING', pid: 20 });
  await h.look(5_000);
  assert.equal(h.calls.filter((c) => c === 'stop idle').length, 1);
});

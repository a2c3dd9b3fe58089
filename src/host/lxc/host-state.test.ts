import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commandSocketName, innermostPid, isListening, readHostState, type HostStateSources } from './host-state.ts';

const ref = { name: 'c1', lxcPath: '/var/lib/svcd/containers' };
const SOCK = '@/var/lib/svcd/containers/c1/command';
const listening = (p: string) =>
  `Num       RefCount Protocol Flags    Type St Inode Path\n0000000001: 00000002 00000000 00010000 0001 01 13303191 ${p}\n`;
const connected = (p: string) =>
  `Num       RefCount Protocol Flags    Type St Inode Path\n0000000001: 00000003 00000000 00000000 0001 03 13303192 ${p}\n`;

/** A host with `files` (path → text), the container's cgroup at /cg/lxc.payload.c1 in a v1 freezer hierarchy. */
function host(sockets: string, files: Record<string, string>, freezer: 'v1' | 'v2' = 'v1'): HostStateSources {
  return {
    unixSockets: async () => sockets,
    cgroupDir: async (name) => ({ dir: `/cg/lxc.payload.${name}`, freezer }),
    readFile: async (f) => files[f],
    exists: async (p) => Object.keys(files).some((f) => f === p || f.startsWith(`${p}/`)),
    emptyCgroup: async (dir) =>
      files[`${dir}/cgroup.procs`] === '' &&
      !Object.keys(files).some((f) => f.startsWith(`${dir}/`) && f.slice(dir.length + 1).includes('/')),
  };
}
const running = {
  '/cg/lxc.payload.c1/cgroup.procs': '900\n901\n',
  '/proc/900/status': 'Name:\tsh\nNSpid:\t900\t7\n',
  '/proc/901/status': 'Name:\tinit\nNSpid:\t901\t1\n',
};

describe('readHostState (spawn-free container state)', () => {
  it('names the command socket as LXC does, and gives up where LXC would hash it', () => {
    assert.equal(commandSocketName(ref), SOCK);
    assert.equal(commandSocketName({ name: 'c1', lxcPath: `/${'x'.repeat(100)}` }), undefined);
  });

  it('finds listening sockets only, and init by its innermost pid', () => {
    assert.equal(isListening(listening(SOCK), SOCK), true);
    assert.equal(isListening(connected(SOCK), SOCK), false);
    assert.equal(isListening(listening(`${SOCK}x`), SOCK), false);
    assert.equal(innermostPid('NSpid:\t4242\t1\n'), 1);
    assert.equal(innermostPid('NSpid:\t4242\n'), 4242);
    assert.equal(innermostPid('Name: x\n'), undefined);
  });

  it('STOPPED only when both the socket and the cgroup are gone', async () => {
    assert.deepEqual(await readHostState(ref, host('', {})), { state: 'STOPPED' });
    // a monitor in another network namespace, or one gone with the container's processes alive: ask lxc-info
    assert.equal(await readHostState(ref, host('', running)), undefined);
    // the cgroup of a run that just ended, not removed yet: empty, no child cgroup → STOPPED without lxc-info
    assert.deepEqual(
      await readHostState(
        ref,
        host('', { '/cg/lxc.payload.c1/cgroup.procs': '', '/cg/lxc.payload.c1/freezer.state': 'THAWED\n' }),
      ),
      { state: 'STOPPED' },
    );
    // processes only in a child cgroup (systemd inside): not STOPPED
    assert.equal(
      await readHostState(
        ref,
        host('', { '/cg/lxc.payload.c1/cgroup.procs': '', '/cg/lxc.payload.c1/init.scope/cgroup.procs': '901\n' }),
      ),
      undefined,
    );
  });

  it('RUNNING or FROZEN with init pid from the cgroup and the freezer (v1 and v2)', async () => {
    assert.deepEqual(
      await readHostState(ref, host(listening(SOCK), { ...running, '/cg/lxc.payload.c1/freezer.state': 'THAWED\n' })),
      { state: 'RUNNING', pid: 901 },
    );
    assert.deepEqual(
      await readHostState(ref, host(listening(SOCK), { ...running, '/cg/lxc.payload.c1/freezer.state': 'FROZEN\n' })),
      { state: 'FROZEN', pid: 901 },
    );
    assert.equal(
      await readHostState(ref, host(listening(SOCK), { ...running, '/cg/lxc.payload.c1/freezer.state': 'FREEZING\n' })),
      undefined,
    );
    assert.deepEqual(
      await readHostState(
        ref,
        host(listening(SOCK), { ...running, '/cg/lxc.payload.c1/cgroup.events': 'populated 1\nfrozen 0\n' }, 'v2'),
      ),
      { state: 'RUNNING', pid: 901 },
    );
    assert.deepEqual(
      await readHostState(
        ref,
        host(listening(SOCK), { ...running, '/cg/lxc.payload.c1/cgroup.events': 'populated 1\nfrozen 1\n' }, 'v2'),
      ),
      { state: 'FROZEN', pid: 901 },
    );
  });

  it('right after lxc-start returned: init in the cgroup decides without the socket; anything less is still undefined', async () => {
    const started = { ...ref, monitorStarted: true };
    assert.deepEqual(
      await readHostState(started, host('', { ...running, '/cg/lxc.payload.c1/freezer.state': 'THAWED\n' })),
      { state: 'RUNNING', pid: 901 },
    );
    assert.equal(await readHostState(started, host('', {})), undefined, 'no cgroup: not STOPPED, ask lxc-info');
    assert.equal(
      await readHostState(
        started,
        host('', { '/cg/lxc.payload.c1/cgroup.procs': '', '/cg/lxc.payload.c1/freezer.state': 'THAWED\n' }),
      ),
      undefined,
    );
  });

  it('undefined while starting or stopping (a monitor without init, or no cgroup yet)', async () => {
    assert.equal(
      await readHostState(
        ref,
        host(listening(SOCK), {
          '/cg/lxc.payload.c1/cgroup.procs': '',
          '/cg/lxc.payload.c1/freezer.state': 'THAWED\n',
        }),
      ),
      undefined,
    );
    assert.equal(await readHostState(ref, host(listening(SOCK), {})), undefined);
  });
});

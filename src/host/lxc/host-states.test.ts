import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostStateSources } from './host-state.ts';
import { createListeningCache, listeningSockets, readHostStates } from './host-states.ts';
import { readHostState } from './host-state.ts';

const LXC = '/var/lib/svcd/containers';
const HEADER = 'Num       RefCount Protocol Flags    Type St Inode Path\n';
const sock = (name: string, flags = '00010000') =>
  `0000000001: 00000002 00000000 ${flags} 0001 01 13303191 @${LXC}/${name}/command\n`;

/** n containers: the even ones running (init pid 1000+i), the odd ones stopped; counts every read. */
function host(n: number) {
  const files: Record<string, string> = {};
  let sockets = HEADER;
  for (let i = 0; i < n; i += 2) {
    sockets += sock(`c${i}`);
    files[`/cg/lxc.payload.c${i}/cgroup.procs`] = `${1000 + i}\n`;
    files[`/proc/${1000 + i}/status`] = `NSpid:\t${1000 + i}\t1\n`;
    files[`/cg/lxc.payload.c${i}/freezer.state`] = i % 4 === 0 ? 'THAWED\n' : 'FROZEN\n';
  }
  const reads = { unixSockets: 0, files: 0, exists: 0 };
  const src: HostStateSources = {
    unixSockets: async () => (reads.unixSockets++, sockets),
    cgroupDir: async (name) => ({ dir: `/cg/lxc.payload.${name}`, freezer: 'v1' }),
    readFile: async (f) => (reads.files++, files[f]),
    exists: async (p) => (reads.exists++, Object.keys(files).some((f) => f.startsWith(`${p}/`))),
    emptyCgroup: async (dir) => files[`${dir}/cgroup.procs`] === '',
  };
  return { src, reads, names: async () => Array.from({ length: n }, (_, i) => `c${i}`) };
}

describe('readHostStates (every container, spawn-free)', () => {
  it('lists listening abstract sockets only', () => {
    assert.deepEqual([...listeningSockets(HEADER + sock('a') + sock('b', '00000000'))], [`@${LXC}/a/command`]);
  });

  it('reads /proc/net/unix once whatever N, a stat per stopped container and three reads per running one', async () => {
    for (const n of [4, 40]) {
      const h = host(n);
      const infos: string[] = [];
      const got = await readHostStates(LXC, {
        src: h.src,
        names: h.names,
        lxcInfo: async (r) => (infos.push(r.name), { state: 'STOPPED' }),
      });
      assert.equal(got.length, n);
      assert.deepEqual(got[0], { name: 'c0', state: 'RUNNING', pid: 1000 });
      assert.deepEqual(got[1], { name: 'c1', state: 'STOPPED' });
      assert.deepEqual(got[2], { name: 'c2', state: 'FROZEN', pid: 1002 });
      assert.deepEqual(infos, [], 'no lxc-info when the records settle every state');
      assert.deepEqual(h.reads, { unixSockets: 1, files: (n / 2) * 3, exists: n / 2 });
    }
  });

  it('asks lxc-info about a container whose records do not settle its state (its monitor up, no init yet)', async () => {
    const h = host(2);
    const noInit = { ...h.src, readFile: async (f: string) => (f.endsWith('cgroup.procs') ? '' : h.src.readFile(f)) };
    const got = await readHostStates(LXC, {
      src: noInit,
      names: h.names,
      lxcInfo: async (r) => ({ state: r.name === 'c0' ? 'STARTING' : 'STOPPED' }),
    });
    assert.deepEqual(got, [
      { name: 'c0', state: 'STARTING' },
      { name: 'c1', state: 'STOPPED' },
    ]);
  });

  it('the listening set is read once per ttl, and a stale one never gives a wrong state (lxc-info decides)', async () => {
    let t = 0;
    let reads = 0;
    let sockets = HEADER + sock('c0');
    const cache = createListeningCache({
      ttlMs: 250,
      now: () => t,
      src: { unixSockets: async () => (reads++, sockets) },
    });
    for (let i = 0; i < 50; i++) await cache();
    assert.equal(reads, 1);
    t = 251;
    assert.deepEqual([...(await cache())], [`@${LXC}/c0/command`]);
    assert.equal(reads, 2);
    // c0 stopped since (socket and cgroup gone) but the set still lists it: no answer from the records.
    const h = host(0);
    const gone = { ...h.src, readFile: async () => undefined, exists: async () => false };
    assert.equal(await readHostState({ name: 'c0', lxcPath: LXC, listening: await cache() }, gone), undefined);
    // c2 started since (cgroup there) but the set does not list it yet: no answer either.
    const up = host(4);
    assert.equal(await readHostState({ name: 'c2', lxcPath: LXC, listening: await cache() }, up.src), undefined);
    sockets = HEADER;
  });
});

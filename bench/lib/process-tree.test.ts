import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { parseKiBField, parseStat, readTreeMemory, selectTree, type ProcInfo } from './process-tree.ts';

const p = (pid: number, ppid: number, ...argv: string[]): ProcInfo => ({
  pid,
  ppid,
  comm: argv[0]?.split('/').pop() ?? '?',
  argv,
});

test('parseStat reads ppid and a comm holding spaces and parentheses', () => {
  assert.deepEqual(parseStat('42 (lxc monitor) x) S 7 42 42 0 -1'), { comm: 'lxc monitor) x', ppid: 7 });
  assert.deepEqual(parseStat('1 (node) R 0 1 1'), { comm: 'node', ppid: 0 });
  assert.equal(parseStat('garbage'), undefined);
});

test('parseKiBField reads VmRSS and Pss lines', () => {
  const rollup =
    '55d0-7ffe ---p 00000000 00:00 0 [rollup]\nRss:               81000 kB\nPss:               40123 kB\nPss_Anon:          30000 kB\n';
  assert.equal(parseKiBField(rollup, 'Pss'), 40123);
  assert.equal(parseKiBField(rollup, 'Rss'), 81000);
  assert.equal(parseKiBField('VmPeak:\t  100 kB\nVmRSS:\t   2048 kB\n', 'VmRSS'), 2048);
  assert.equal(parseKiBField('VmRSS:\n', 'VmRSS'), undefined);
});

test('selectTree: descendants and state-dir processes, not containers, not the bench', () => {
  const procs = [
    p(1, 0, '/sbin/init'),
    p(100, 1, 'node', '/srv/svcd/dist/main.js'),
    p(101, 100, '/srv/svcd/.build/svcd-spawn'),
    p(102, 101, '/usr/lib/postgresql/15/bin/postgres', '-D', '/var/lib/svcd/postgres'),
    p(103, 102, 'postgres: checkpointer'),
    // detached: re-parented to init, found by the state directory in its argv
    p(200, 1, 'dnsmasq', '--pid-file=/var/lib/svcd/networks/br0/dnsmasq.pid'),
    p(201, 1, 'svcd-proxy', '--daemon', '/var/lib/svcd/proxy/c1.sock'),
    // containers: the monitor and what runs under it, even when it names the state dir
    p(300, 1, '[lxc monitor] /var/lib/svcd/containers c1'),
    p(301, 300, '/sbin/init'),
    p(302, 301, '/bin/sh'),
    p(310, 101, '[lxc monitor] /var/lib/svcd/containers c2'),
    // a neighbour whose path only shares a prefix
    p(400, 1, 'cat', '/var/lib/svcd2/x'),
    // the bench, whose argv names the socket
    p(500, 1, 'node', 'bench/api-bench.ts', '--socket', '/var/lib/svcd/unix.socket'),
  ];
  const pids = (o?: Parameters<typeof selectTree>[2]) => selectTree(procs, 100, o).map((x) => x.pid);
  assert.deepEqual(pids(), [100, 101, 102, 103]);
  assert.deepEqual(pids({ ownedPath: '/var/lib/svcd', skip: [500, 1] }), [100, 101, 102, 103, 200, 201]);
  assert.deepEqual(pids({ ownedPath: '/var/lib/svcd/', exclude: [500, 102] }), [100, 101, 200, 201]);
  assert.deepEqual(selectTree(procs, 999), []);
});

test('readTreeMemory sums a live tree: a child adds its RSS and PSS; the reader is left out', async () => {
  const child = spawn(
    process.execPath,
    ['-e', 'const b = Buffer.alloc(64 << 20, 1); setInterval(() => b[0]++, 1000)'],
    { stdio: 'ignore' },
  );
  try {
    const self = await readTreeMemory(process.pid);
    assert.ok(self);
    await new Promise((r) => setTimeout(r, 700));
    const withChild = await readTreeMemory(process.pid);
    assert.ok(withChild);
    assert.ok(
      withChild.processes.some((x) => x.pid === child.pid),
      'the child is part of the tree',
    );
    const c = withChild.processes.find((x) => x.pid === child.pid)!;
    assert.ok(c.rssKiB > 64 * 1024 && c.pssKiB > 60 * 1024, `child ${c.rssKiB}/${c.pssKiB} KiB`);
    assert.equal(
      withChild.rssKiB,
      withChild.processes.reduce((s, x) => s + x.rssKiB, 0),
    );
    assert.ok(withChild.pssKiB <= withChild.rssKiB);
    // Measured from outside (the child as root), the reader's ancestors are not counted.
    const fromChild = await readTreeMemory(child.pid!);
    assert.deepEqual(
      fromChild?.processes.map((x) => x.pid),
      [child.pid],
    );
  } finally {
    child.kill('SIGKILL');
  }
  assert.equal(await readTreeMemory(2 ** 22 + 1), undefined);
});

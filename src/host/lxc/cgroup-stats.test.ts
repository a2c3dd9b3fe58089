import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parseMountinfo } from '../storage/mountinfo.ts';
import { readCgroupStats } from './cgroup-stats.ts';
import { cgroupDir, cgroupMountsFrom, containerCgroupPath, parseFlatKeyed, parseProcCgroup } from './parse-cgroup.ts';

const HYBRID_PROC = `9:name=systemd:/lxc.payload.c2
8:pids:/lxc.payload.c2
4:memory:/lxc.payload.c2
2:cpu,cpuacct:/lxc.payload.c2/init.scope
0::/lxc.payload.c2
`;

const mountinfo = (root: string, lines: string[]) =>
  parseMountinfo(lines.map((l) => l.replaceAll('$R', root)).join('\n'));

describe('parsers', () => {
  it('reads /proc/<pid>/cgroup', () => {
    const p = parseProcCgroup(HYBRID_PROC);
    assert.equal(p.v2, '/lxc.payload.c2');
    assert.equal(p.v1.get('cpuacct'), '/lxc.payload.c2/init.scope');
    assert.equal(p.v1.get('memory'), '/lxc.payload.c2');
    assert.equal(p.v1.has('name=systemd'), true);
    assert.deepEqual(parseProcCgroup('0::/'), { v1: new Map(), v2: '/' });
  });

  it('finds cgroup mounts by controller', () => {
    const m = cgroupMountsFrom(
      mountinfo('', [
        '30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct',
        '31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory',
        '32 25 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd',
        '33 25 0:29 /lxc.payload.outer /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
      ]),
    );
    assert.deepEqual(m.v1.get('cpuacct'), { mountPoint: '/sys/fs/cgroup/cpu,cpuacct', root: '/' });
    assert.deepEqual(m.v1.get('memory'), { mountPoint: '/sys/fs/cgroup/memory', root: '/' });
    assert.deepEqual(m.v1.get('name=systemd'), { mountPoint: '/sys/fs/cgroup/systemd', root: '/' });
    assert.equal(m.v1.has('xattr'), true); // harmless: no /proc/<pid>/cgroup line names it
    assert.deepEqual(m.v2, { mountPoint: '/sys/fs/cgroup/unified', root: '/lxc.payload.outer' });
    assert.equal(cgroupDir(m.v2!, '/lxc.payload.outer/lxc.payload.c1'), '/sys/fs/cgroup/unified/lxc.payload.c1');
    assert.equal(cgroupDir(m.v2!, '/elsewhere'), undefined);
  });

  it('cuts init sub-cgroups back to the container', () => {
    assert.equal(containerCgroupPath('/lxc.payload.c2/init.scope'), '/lxc.payload.c2');
    assert.equal(containerCgroupPath('/lxc.payload.c2'), '/lxc.payload.c2');
    assert.equal(containerCgroupPath('/machine/c2'), '/machine/c2');
  });

  it('reads flat-keyed files', () => {
    assert.deepEqual(
      [...parseFlatKeyed('usage_usec 1500\nuser_usec 1000\nbad x\n')],
      [
        ['usage_usec', 1500],
        ['user_usec', 1000],
      ],
    );
  });
});

describe('readCgroupStats on fake cgroup trees', () => {
  const roots: string[] = [];
  after(async () => {
    for (const r of roots) await rm(r, { recursive: true, force: true });
  });
  async function tree(files: Record<string, string>): Promise<string> {
    const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-cgstats-'));
    roots.push(root);
    for (const [f, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, f)), { recursive: true });
      await writeFile(path.join(root, f), text);
    }
    return root;
  }

  it('unified (v2) host', async () => {
    const r = await tree({
      'proc/42/cgroup': '0::/lxc.payload.c1/init.scope\n',
      'cg/lxc.payload.c1/cpu.stat': 'usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n',
      'cg/lxc.payload.c1/memory.current': '1048576\n',
      'cg/lxc.payload.c1/memory.peak': '2097152\n',
      'cg/lxc.payload.c1/memory.swap.current': '0\n',
      'cg/lxc.payload.c1/pids.current': '3\n',
    });
    const mounts = mountinfo(r, ['30 25 0:26 / $R/cg rw - cgroup2 cgroup2 rw']);
    assert.deepEqual(await readCgroupStats({ pid: 42, procRoot: path.join(r, 'proc'), mounts }), {
      cpuUsageNs: 2_500_000,
      memoryUsage: 1048576,
      memoryPeak: 2097152,
      swapUsage: 0,
      processes: 3,
    });
  });

  it('hybrid host: v1 controllers win, processes counted when there is no pids controller', async () => {
    const r = await tree({
      'proc/7/cgroup': '4:memory:/lxc.payload.c2\n2:cpu,cpuacct:/lxc.payload.c2\n0::/lxc.payload.c2\n',
      'memory/lxc.payload.c2/memory.usage_in_bytes': '4096\n',
      'memory/lxc.payload.c2/memory.max_usage_in_bytes': '8192\n',
      'memory/lxc.payload.c2/memory.memsw.usage_in_bytes': '5096\n',
      'cpu,cpuacct/lxc.payload.c2/cpuacct.usage': '123456789\n',
      'unified/lxc.payload.c2/cpu.stat': 'usage_usec 1\n',
      'unified/lxc.payload.c2/cgroup.procs': '1\n2\n',
      'unified/lxc.payload.c2/sub/cgroup.procs': '3\n',
    });
    const mounts = mountinfo(r, [
      '30 25 0:26 / $R/memory rw - cgroup cgroup rw,memory',
      '31 25 0:27 / $R/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct',
      '32 25 0:28 / $R/unified rw - cgroup2 cgroup2 rw',
    ]);
    assert.deepEqual(await readCgroupStats({ pid: 7, procRoot: path.join(r, 'proc'), mounts }), {
      cpuUsageNs: 123456789,
      memoryUsage: 4096,
      memoryPeak: 8192,
      swapUsage: 1000,
      processes: 3,
    });
  });

  it('rejects when the pid is gone', async () => {
    const r = await tree({});
    await assert.rejects(readCgroupStats({ pid: 1, procRoot: path.join(r, 'proc'), mounts: [] }), /ENOENT/);
  });
});

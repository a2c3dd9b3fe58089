import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parseCpuList } from './parse-cpu-list.ts';
import { readCpuResources, readMemoryResources, readResources } from './read-resources.ts';
import { MEMINFO_MODERN, MEMINFO_NO_AVAILABLE, x86CpuinfoWithout } from './test-fixtures.ts';

const XEON = 'Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz';

async function put(root: string, rel: string, content: string): Promise<void> {
  const file = path.join(root, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
}

/**
 * Two sockets × 2 cores × 2 threads (cpu0-7, same numbering as the cpuinfo
 * fixture); cpu7 is offline: absent from cpuinfo and the online list, but its
 * (stale) topology directory is still there. Socket 0 has cpufreq, socket 1
 * does not.
 */
async function buildFakeHost(root: string): Promise<void> {
  await put(root, 'proc/cpuinfo', x86CpuinfoWithout(7));
  await put(root, 'proc/meminfo', MEMINFO_MODERN);
  const cpu = 'sys/devices/system/cpu';
  await put(root, `${cpu}/online`, '0-6\n');
  await put(root, `${cpu}/offline`, '7\n');
  await put(root, `${cpu}/present`, '0-7\n');
  await put(root, `${cpu}/possible`, '0-7\n');
  // [cpu, package, core, scaling_cur_freq kHz | undefined]
  const layout: Array<[number, number, number, number | undefined]> = [
    [0, 0, 0, 1_200_000],
    [1, 0, 1, 2_400_000],
    [2, 1, 0, undefined],
    [3, 1, 1, undefined],
    [4, 0, 0, 1_800_000],
    [5, 0, 1, 1_800_499],
    [6, 1, 0, undefined],
    [7, 1, 1, undefined],
  ];
  for (const [id, pkg, core, cur] of layout) {
    const dir = `${cpu}/cpu${id}`;
    await put(root, `${dir}/online`, id === 7 ? '0\n' : '1\n');
    await put(root, `${dir}/topology/physical_package_id`, `${pkg}\n`);
    await put(root, `${dir}/topology/core_id`, `${core}\n`);
    await put(root, `${dir}/topology/die_id`, '0\n');
    if (cur !== undefined) {
      await put(root, `${dir}/cpufreq/scaling_cur_freq`, `${cur}\n`);
      await put(root, `${dir}/cpufreq/cpuinfo_max_freq`, '3000000\n');
      await put(root, `${dir}/cpufreq/cpuinfo_min_freq`, '1200000\n');
    }
  }
}

let root = '';
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-resources-'));
  await buildFakeHost(root);
});
after(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('fake host: exact resources', async () => {
  const r = await readResources({ root });
  assert.deepEqual(r, {
    cpu: {
      sockets: [
        // (1200 + 2400 + 1800 + 1800.499) / 4 = 1800.12
        { cores: 2, frequency: 1800, frequency_turbo: 3000, name: XEON, vendor: 'GenuineIntel', threads: 4 },
        // no cpufreq: cpuinfo MHz of cpu2, cpu3, cpu6: (2095.5 + 2100 + 2099.9) / 3 = 2098.47
        { cores: 2, frequency: 2098, frequency_turbo: 0, name: XEON, vendor: 'GenuineIntel', threads: 3 },
      ],
      total: 7,
    },
    memory: { used: (16303480 - 11843220) * 1024, total: 16303480 * 1024 },
  });
});

test('fake host: the parts can be read separately', async () => {
  const [cpu, memory, all] = await Promise.all([
    readCpuResources({ root }),
    readMemoryResources({ root }),
    readResources({ root }),
  ]);
  assert.deepEqual({ cpu, memory }, all);
});

test('fake host without /sys: falls back to /proc/cpuinfo', async () => {
  const bare = await mkdtemp(path.join(os.tmpdir(), 'svcd-resources-bare-'));
  try {
    await put(bare, 'proc/cpuinfo', x86CpuinfoWithout(7));
    await put(bare, 'proc/meminfo', MEMINFO_NO_AVAILABLE);
    const r = await readResources({ root: bare });
    assert.deepEqual(r.cpu, {
      sockets: [
        // (1200.042 + 2100 + 1800.112 + 1500) / 4
        { cores: 2, frequency: 1650, frequency_turbo: 0, name: XEON, vendor: 'GenuineIntel', threads: 4 },
        { cores: 2, frequency: 2098, frequency_turbo: 0, name: XEON, vendor: 'GenuineIntel', threads: 3 },
      ],
      total: 7,
    });
    assert.deepEqual(r.memory, {
      used: (2049988 - 123456 - 65432 - 789012) * 1024,
      total: 2049988 * 1024,
    });
  } finally {
    await rm(bare, { recursive: true, force: true });
  }
});

test('missing /proc/meminfo is an error', async () => {
  const empty = await mkdtemp(path.join(os.tmpdir(), 'svcd-resources-empty-'));
  try {
    await assert.rejects(readResources({ root: empty }), { code: 'ENOENT' });
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});

test('real host: invariants', { skip: process.platform !== 'linux' }, async () => {
  const r = await readResources();

  assert.ok(Number.isInteger(r.cpu.total) && r.cpu.total >= 1, `total=${r.cpu.total}`);
  const presentFile = '/sys/devices/system/cpu/present';
  const onlineFile = '/sys/devices/system/cpu/online';
  const allOnline =
    existsSync(presentFile) &&
    existsSync(onlineFile) &&
    readFileSync(presentFile, 'utf8').trim() === readFileSync(onlineFile, 'utf8').trim();
  if (allOnline) {
    assert.equal(r.cpu.total, os.cpus().length);
  } else if (existsSync(presentFile)) {
    assert.ok(r.cpu.total <= parseCpuList(readFileSync(presentFile, 'utf8')).length);
  }

  assert.ok(r.cpu.sockets.length >= 1);
  assert.equal(
    r.cpu.sockets.reduce((sum, s) => sum + s.threads, 0),
    r.cpu.total,
  );
  for (const s of r.cpu.sockets) {
    for (const k of ['cores', 'frequency', 'frequency_turbo', 'threads'] as const) {
      assert.ok(Number.isInteger(s[k]) && s[k] >= 0, `${k}=${s[k]}`);
    }
    assert.ok(s.cores >= 1 && s.cores <= s.threads, `cores=${s.cores} threads=${s.threads}`);
    assert.equal(typeof s.name, 'string');
    assert.equal(typeof s.vendor, 'string');
  }

  const totalmem = os.totalmem();
  assert.ok(
    Math.abs(r.memory.total - totalmem) <= totalmem * 0.01,
    `memory.total=${r.memory.total} os.totalmem()=${totalmem}`,
  );
  assert.ok(Number.isInteger(r.memory.used) && Number.isInteger(r.memory.total));
  assert.ok(r.memory.used > 0 && r.memory.used < r.memory.total, `used=${r.memory.used} total=${r.memory.total}`);
});

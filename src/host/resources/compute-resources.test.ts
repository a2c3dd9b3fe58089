import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeCpu, computeMemory, computeResources } from './compute-resources.ts';
import type { CpuSysFacts } from './compute-resources.ts';
import { parseCpuinfo } from './parse-cpuinfo.ts';
import { parseMeminfo } from './parse-meminfo.ts';
import { AARCH64_RPI4_CPUINFO, MEMINFO_MODERN, MEMINFO_NO_AVAILABLE, X86_TWO_SOCKET_CPUINFO } from './test-fixtures.ts';

const XEON = 'Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz';

test('x86 two sockets from /proc/cpuinfo alone (no /sys)', () => {
  const cpu = computeCpu({ cpuinfo: parseCpuinfo(X86_TWO_SOCKET_CPUINFO), online: undefined, sys: new Map() });
  assert.deepEqual(cpu, {
    sockets: [
      // (1200.042 + 2100 + 1800.112 + 1500) / 4 = 1650.04
      { cores: 2, frequency: 1650, frequency_turbo: 0, name: XEON, vendor: 'GenuineIntel', threads: 4 },
      // (2095.5 + 2100 + 2099.9 + 1204.6) / 4 = 1875
      { cores: 2, frequency: 1875, frequency_turbo: 0, name: XEON, vendor: 'GenuineIntel', threads: 4 },
    ],
    total: 8,
  });
});

test('/sys topology and cpufreq take precedence over cpuinfo; only online CPUs count', () => {
  const cpuinfo = parseCpuinfo(X86_TWO_SOCKET_CPUINFO);
  const sys = new Map<number, CpuSysFacts>([
    // /sys says all four online CPUs are one package with two cores
    [0, { physicalPackageId: 3, coreId: 0, curFreqKhz: 2_000_000, maxFreqKhz: 3_000_000 }],
    [1, { physicalPackageId: 3, coreId: 1, curFreqKhz: 1_000_000, maxFreqKhz: 3_200_000 }],
    [2, { physicalPackageId: 3, coreId: 0, curFreqKhz: 1_500_500 }],
    [3, { physicalPackageId: 3, coreId: 1 /* no cpufreq: cpuinfo's 2100.000 */ }],
  ]);
  const cpu = computeCpu({ cpuinfo, online: [0, 1, 2, 3], sys });
  assert.deepEqual(cpu, {
    sockets: [
      // (2000 + 1000 + 1500.5 + 2100) / 4 = 1650.125
      { cores: 2, frequency: 1650, frequency_turbo: 3200, name: XEON, vendor: 'GenuineIntel', threads: 4 },
    ],
    total: 4,
  });
});

test('sockets are ordered by package id and named from their own CPUs', () => {
  const cpuinfo = parseCpuinfo(
    'processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\ncpu MHz\t\t: 2450.000\n\n' +
      'processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\ncpu MHz\t\t: 2000.000\n',
  );
  const sys = new Map<number, CpuSysFacts>([
    [0, { physicalPackageId: 1, coreId: 0 }],
    [1, { physicalPackageId: 0, coreId: 0 }],
  ]);
  const cpu = computeCpu({ cpuinfo, online: [0, 1], sys });
  assert.deepEqual(
    cpu.sockets.map((s) => [s.vendor, s.frequency]),
    [
      ['GenuineIntel', 2000],
      ['AuthenticAMD', 2450],
    ],
  );
});

test('core_id is qualified by die and cluster', () => {
  const cpuinfo = parseCpuinfo('');
  const sys = new Map<number, CpuSysFacts>([
    [0, { physicalPackageId: 0, clusterId: 0, coreId: 0 }],
    [1, { physicalPackageId: 0, clusterId: 0, coreId: 1 }],
    [2, { physicalPackageId: 0, clusterId: 1, coreId: 0 }],
    [3, { physicalPackageId: 0, clusterId: 1, coreId: 1 }],
  ]);
  const cpu = computeCpu({ cpuinfo, online: [0, 1, 2, 3], sys });
  assert.deepEqual(cpu, {
    sockets: [{ cores: 4, frequency: 0, frequency_turbo: 0, name: '', vendor: '', threads: 4 }],
    total: 4,
  });
});

test('aarch64 without topology: one socket, one core per processor', () => {
  const cpu = computeCpu({ cpuinfo: parseCpuinfo(AARCH64_RPI4_CPUINFO), online: [0, 1, 2, 3], sys: new Map() });
  assert.deepEqual(cpu, {
    sockets: [{ cores: 4, frequency: 0, frequency_turbo: 0, name: 'Cortex-A72', vendor: 'ARM', threads: 4 }],
    total: 4,
  });
});

test('memory from MemAvailable', () => {
  assert.deepEqual(computeMemory(parseMeminfo(MEMINFO_MODERN)), {
    used: (16303480 - 11843220) * 1024,
    total: 16303480 * 1024,
  });
});

test('memory without MemAvailable uses MemFree + Buffers + Cached', () => {
  assert.deepEqual(computeMemory(parseMeminfo(MEMINFO_NO_AVAILABLE)), {
    used: (2049988 - 123456 - 65432 - 789012) * 1024,
    total: 2049988 * 1024,
  });
});

test('memory: used is clamped, MemTotal is required', () => {
  assert.deepEqual(computeMemory({ MemTotal: 1000, MemAvailable: 2000 }), { used: 0, total: 1000 });
  assert.throws(() => computeMemory({ MemFree: 5 }), /MemTotal/);
});

test('computeResources combines both parts', () => {
  const r = computeResources({
    cpuinfo: parseCpuinfo(AARCH64_RPI4_CPUINFO),
    online: [0, 1],
    sys: new Map(),
    meminfo: parseMeminfo(MEMINFO_MODERN),
  });
  assert.equal(r.cpu.total, 2);
  assert.equal(r.cpu.sockets[0]?.threads, 2);
  assert.equal(r.memory.total, 16303480 * 1024);
});

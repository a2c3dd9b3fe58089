import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCpuinfo } from './parse-cpuinfo.ts';
import { AARCH64_RPI4_CPUINFO, X86_TWO_SOCKET_CPUINFO } from './test-fixtures.ts';

test('x86 two-socket hyperthreaded cpuinfo: one record per processor', () => {
  const { processors, global } = parseCpuinfo(X86_TWO_SOCKET_CPUINFO);
  assert.deepEqual(global, {});
  assert.deepEqual(
    processors.map((p) => [p.processor, p.physicalId, p.coreId, p.mhz]),
    [
      [0, 0, 0, 1200.042],
      [1, 0, 1, 2100],
      [2, 1, 0, 2095.5],
      [3, 1, 1, 2100],
      [4, 0, 0, 1800.112],
      [5, 0, 1, 1500],
      [6, 1, 0, 2099.9],
      [7, 1, 1, 1204.6],
    ],
  );
  for (const p of processors) {
    assert.equal(p.vendor, 'GenuineIntel');
    assert.equal(p.name, 'Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz');
    assert.equal(p.fields.siblings, '4');
    assert.equal(p.fields['power management'], '');
  }
});

test('aarch64 cpuinfo: vendor from CPU implementer, name from CPU part, no MHz', () => {
  const { processors, global } = parseCpuinfo(AARCH64_RPI4_CPUINFO);
  assert.equal(processors.length, 4);
  assert.deepEqual(
    processors.map((p) => p.processor),
    [0, 1, 2, 3],
  );
  for (const p of processors) {
    assert.equal(p.vendor, 'ARM');
    assert.equal(p.name, 'Cortex-A72');
    assert.equal(p.mhz, undefined);
    assert.equal(p.physicalId, undefined);
    assert.equal(p.coreId, undefined);
    assert.equal(p.fields['CPU architecture'], '8');
  }
  assert.equal(global.Hardware, 'BCM2835');
  assert.equal(global.Model, 'Raspberry Pi 4 Model B Rev 1.1');
});

test('aarch64 with an unknown part falls back to Hardware; unknown implementer is kept raw', () => {
  const text =
    'processor\t: 0\nCPU implementer\t: 0x51\nCPU part\t: 0x805\n\nHardware\t: Qualcomm Technologies, Inc SM8150\n';
  const [p] = parseCpuinfo(text).processors;
  assert.equal(p?.vendor, 'Qualcomm');
  assert.equal(p?.name, 'Qualcomm Technologies, Inc SM8150');

  const [q] = parseCpuinfo('processor\t: 0\nCPU implementer\t: 0x99\nCPU part\t: 0x001\n').processors;
  assert.equal(q?.vendor, '0x99');
  assert.equal(q?.name, '');
});

test("ppc64le: name from 'cpu', MHz from 'clock'", () => {
  const text =
    'processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\nclock\t\t: 2900.000000MHz\nrevision\t: 2.2 (pvr 004e 1202)\n\n' +
    'timebase\t: 512000000\nplatform\t: pSeries\nmodel\t\t: IBM pSeries (emulated by qemu)\n';
  const { processors, global } = parseCpuinfo(text);
  assert.equal(processors[0]?.name, 'POWER9 (architected), altivec supported');
  assert.equal(processors[0]?.mhz, 2900);
  assert.equal(processors[0]?.vendor, '');
  assert.equal(global.platform, 'pSeries');
});

test("old 32-bit ARM: 'Processor' printed once is inherited by all processors", () => {
  const text =
    'Processor\t: ARMv7 Processor rev 10 (v7l)\nprocessor\t: 0\nBogoMIPS\t: 790.52\n\nprocessor\t: 1\nBogoMIPS\t: 790.52\n\n' +
    'Features\t: swp half thumb fastmult vfp edsp neon vfpv3 tls\nCPU implementer\t: 0x41\nCPU part\t: 0xc09\n\nHardware\t: Freescale i.MX 6Quad\n';
  const { processors } = parseCpuinfo(text);
  assert.deepEqual(
    processors.map((p) => [p.processor, p.vendor, p.name]),
    [
      [0, 'ARM', 'ARMv7 Processor rev 10 (v7l)'],
      [1, 'ARM', 'ARMv7 Processor rev 10 (v7l)'],
    ],
  );
});

test('empty input', () => {
  assert.deepEqual(parseCpuinfo(''), { processors: [], global: {} });
});

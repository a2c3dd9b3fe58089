import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createResourcesCache } from './cache.ts';
import type { MemoryResources, ServerResources } from './compute-resources.ts';
import { AARCH64_RPI4_CPUINFO, MEMINFO_MODERN, MEMINFO_NO_AVAILABLE } from './test-fixtures.ts';

const CPU = {
  sockets: [{ cores: 2, frequency: 2000, frequency_turbo: 3000, name: 'X', vendor: 'V', threads: 4 }],
  total: 4,
};

function fakes() {
  const calls = { all: 0, memory: 0 };
  let clock = 1_000;
  let usedNext = 100;
  return {
    calls,
    advance(ms: number) {
      clock += ms;
    },
    setUsed(v: number) {
      usedNext = v;
    },
    now: () => clock,
    readResources: async (): Promise<ServerResources> => {
      calls.all += 1;
      return { cpu: structuredClone(CPU), memory: { used: usedNext, total: 1000 } };
    },
    readMemory: async (): Promise<MemoryResources> => {
      calls.memory += 1;
      return { used: usedNext, total: 1000 };
    },
  };
}

test('cpu is read once; memory is re-read only once ttlMs old', async () => {
  const f = fakes();
  const cache = createResourcesCache({
    readResources: f.readResources,
    readMemory: f.readMemory,
    ttlMs: 1000,
    now: f.now,
  });

  assert.deepEqual(await cache.get(), { cpu: CPU, memory: { used: 100, total: 1000 } });
  assert.deepEqual(f.calls, { all: 1, memory: 0 });

  f.setUsed(200);
  f.advance(999);
  assert.equal((await cache.get()).memory.used, 100);
  assert.deepEqual(f.calls, { all: 1, memory: 0 });

  f.advance(1);
  const r = await cache.get();
  assert.deepEqual(r, { cpu: CPU, memory: { used: 200, total: 1000 } });
  assert.deepEqual(f.calls, { all: 1, memory: 1 });

  // fresh again right after the refresh
  f.setUsed(300);
  f.advance(500);
  assert.equal((await cache.get()).memory.used, 200);
  assert.deepEqual(f.calls, { all: 1, memory: 1 });
});

test('concurrent callers share one read', async () => {
  const f = fakes();
  const cache = createResourcesCache({
    readResources: f.readResources,
    readMemory: f.readMemory,
    ttlMs: 10,
    now: f.now,
  });
  await Promise.all([cache.get(), cache.get(), cache.get()]);
  assert.deepEqual(f.calls, { all: 1, memory: 0 });
  f.advance(10);
  await Promise.all([cache.get(), cache.get(), cache.get()]);
  assert.deepEqual(f.calls, { all: 1, memory: 1 });
});

test('callers cannot corrupt the cache by mutating the result', async () => {
  const f = fakes();
  const cache = createResourcesCache({ readResources: f.readResources, readMemory: f.readMemory, now: f.now });
  const r = await cache.get();
  r.cpu.sockets[0]!.cores = 99;
  r.cpu.sockets.push({ ...CPU.sockets[0]! });
  r.memory.used = -1;
  assert.deepEqual(await cache.get(), { cpu: CPU, memory: { used: 100, total: 1000 } });
});

test('a failed refresh rejects, keeps nothing broken, and is retried', async () => {
  const f = fakes();
  let fail = true;
  const cache = createResourcesCache({
    readResources: f.readResources,
    readMemory: async () => {
      if (fail) throw new Error('boom');
      return f.readMemory();
    },
    ttlMs: 10,
    now: f.now,
  });
  await cache.get();
  f.advance(10);
  await assert.rejects(cache.get(), /boom/);
  fail = false;
  f.setUsed(7);
  assert.equal((await cache.get()).memory.used, 7);
  assert.deepEqual(f.calls, { all: 1, memory: 1 });
});

test('invalidate() forces a full re-read', async () => {
  const f = fakes();
  const cache = createResourcesCache({ readResources: f.readResources, readMemory: f.readMemory, now: f.now });
  await cache.get();
  cache.invalidate();
  await cache.get();
  assert.deepEqual(f.calls, { all: 2, memory: 0 });
});

test('with only readResources injected, memory refreshes go through it', async () => {
  const f = fakes();
  const cache = createResourcesCache({ readResources: f.readResources, ttlMs: 5, now: f.now });
  await cache.get();
  f.setUsed(55);
  f.advance(5);
  assert.equal((await cache.get()).memory.used, 55);
  assert.deepEqual(f.calls, { all: 2, memory: 0 });
});

test('default readers on a fake root: refresh reads only /proc/meminfo', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svcd-resources-cache-'));
  try {
    await mkdir(path.join(root, 'proc'), { recursive: true });
    await writeFile(path.join(root, 'proc/cpuinfo'), AARCH64_RPI4_CPUINFO);
    await writeFile(path.join(root, 'proc/meminfo'), MEMINFO_MODERN);
    let clock = 0;
    const cache = createResourcesCache({ root, ttlMs: 100, now: () => clock });

    const first = await cache.get();
    assert.equal(first.cpu.total, 4);
    assert.equal(first.memory.total, 16303480 * 1024);

    // cpuinfo disappears: a full re-read would fail; a memory-only refresh does not
    await rm(path.join(root, 'proc/cpuinfo'));
    await writeFile(path.join(root, 'proc/meminfo'), MEMINFO_NO_AVAILABLE);
    clock = 100;
    const second = await cache.get();
    assert.deepEqual(second.cpu, first.cpu);
    assert.deepEqual(second.memory, { used: (2049988 - 123456 - 65432 - 789012) * 1024, total: 2049988 * 1024 });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

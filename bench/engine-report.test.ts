import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engineRows } from './engine-report.ts';
import type { BenchResults, StepStats } from './lib/results.ts';
import { summarize } from './lib/stats.ts';

const step = (ms: number): StepStats => ({ ok: 1, failed: 0, errors: [], latency: summarize([ms]) });
function result(ms: { create: number; del: number; wall: number; list: number }): BenchResults {
  return {
    label: '',
    socket: '',
    server: { name: 'x', version: '1' },
    startedAt: '',
    image: { ref: '', imported: false },
    options: { counts: [0, 200], concurrency: [1], durationS: 1, iterations: 1, skipExec: false, settleS: 0 },
    rss: {},
    get: [
      {
        what: 'list',
        path: '',
        containers: 200,
        concurrency: 1,
        requests: 1,
        errors: 0,
        seconds: 1,
        rps: ms.list,
        latency: summarize([1]),
        bodyBytes: 1,
      },
    ],
    single: {
      iterations: 1,
      create: step(ms.create),
      start: step(30),
      createStart: step(ms.create + 30),
      exec: { ...step(5), supported: true },
      stopForce: step(10),
      delete: step(ms.del),
    },
    bulk: [
      {
        n: 200,
        createStartWallMs: ms.wall,
        createFailed: 0,
        startFailed: 0,
        runningObserved: 200,
        deleteWallMs: 1000,
        stopFailed: 0,
        deleteFailed: 0,
        errors: {},
      },
    ],
    leftovers: [],
    load: [],
  } as BenchResults;
}
const verdictOf = (rows: ReturnType<typeof engineRows>, label: string) => {
  const r = rows.find((x) => (x[0] ?? '').startsWith(label));
  return r ? r[r.length - 2] : undefined;
};

test('PostgreSQL passes within 1.25× of PGlite and misses beyond, times and rates alike', () => {
  const pglite = result({ create: 10, del: 4, wall: 6000, list: 8000 });
  const rows = engineRows(
    [
      ['PGlite', pglite],
      ['PostgreSQL', result({ create: 12.5, del: 7, wall: 7600, list: 6000 })],
    ],
    result({ create: 40, del: 12, wall: 20000, list: 30 }),
  );
  assert.equal(verdictOf(rows, 'create (median)'), 'PASS');
  assert.equal(verdictOf(rows, '200 creates+starts'), 'MISS');
  assert.equal(verdictOf(rows, 'list of 200, c=1'), 'MISS');
  assert.equal(verdictOf(rows, 'list of 200, c=16'), 'n/a');
  assert.equal(verdictOf(rows, 'delete (median)'), 'MISS');
  assert.equal(verdictOf(rows, 'delete on PGlite ≤ ½ lxd'), 'PASS');
  assert.equal(verdictOf(rows, 'delete on PostgreSQL ≤ ½ lxd'), 'MISS');
  assert.equal(rows.find((r) => r[0] === 'create (median)')?.[4], 'PostgreSQL 1.25×');
});

test('without lxd the delete verdicts are n/a; without PostgreSQL the engine verdicts are', () => {
  const rows = engineRows(
    [
      ['PGlite', result({ create: 10, del: 4, wall: 6000, list: 8000 })],
      ['PostgreSQL', undefined],
    ],
    undefined,
  );
  assert.equal(verdictOf(rows, 'create (median)'), 'n/a');
  assert.equal(verdictOf(rows, 'delete on PGlite ≤ ½ lxd'), 'n/a');
  assert.equal(verdictOf(rows, 'delete on PostgreSQL'), undefined);
});

test('three engines: the verdict is the worst of the others against the reference', () => {
  const rows = engineRows(
    [
      ['PGlite', result({ create: 10, del: 4, wall: 6000, list: 8000 })],
      ['private server', result({ create: 11, del: 4, wall: 5000, list: 9000 })],
      ['PostgreSQL', result({ create: 14, del: 4, wall: 5000, list: 9000 })],
    ],
    undefined,
  );
  const create = rows.find((r) => r[0] === 'create (median)')!;
  assert.equal(create.length, 8);
  assert.equal(create[5], 'private server 1.10×, PostgreSQL 1.40×');
  assert.equal(create[6], 'MISS');
  assert.equal(verdictOf(rows, '200 creates+starts'), 'PASS');
});

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createIdleGc } from './idle-gc.mjs';

it('collects once the requests have been quiet for a while, not while they keep coming', async () => {
  const idle = createIdleGc(200);
  let garbage: object[] | undefined = Array.from({ length: 1_000_000 }, (_, i) => ({ i }));
  const before = process.memoryUsage().heapUsed;
  garbage = undefined;
  assert.equal(garbage, undefined);
  // activity every 50 ms for 400 ms: the quiet period never passes
  for (let i = 0; i < 8; i++) {
    idle.activity();
    await sleep(50);
  }
  const early = process.memoryUsage().heapUsed;
  assert.ok(early > before / 2, 'no collection while the requests kept coming');
  idle.activity();
  await sleep(600);
  const after = process.memoryUsage().heapUsed;
  assert.ok(after < before / 2, `heap ${Math.round(before / 1e6)} MB -> ${Math.round(after / 1e6)} MB`);
  idle.stop();
});

it('gives back the pages a burst left fragmented (heapTotal shrinks, not only heapUsed)', async () => {
  const idle = createIdleGc(100);
  let burst: object[] | undefined = Array.from({ length: 400_000 }, (_, i) => ({
    a: `x${i}`,
    b: [i, i + 1],
    c: { d: i },
  }));
  // One object in 50 survives: every page of the burst keeps a few live objects.
  const survivors = burst.filter((_, i) => i % 50 === 0);
  const grown = process.memoryUsage().heapTotal;
  burst = undefined;
  idle.activity();
  await sleep(500);
  const after = process.memoryUsage();
  assert.ok(
    after.heapTotal < grown / 2,
    `heapTotal ${Math.round(grown / 1e6)} MB -> ${Math.round(after.heapTotal / 1e6)} MB`,
  );
  assert.equal(survivors.length, 8_000);
  idle.stop();
});

it('with quietBelow, a trickle of activity still counts as quiet once a burst has passed', async () => {
  const idle = createIdleGc(100, { quietBelow: 2, minActivity: 20 });
  let burst: object[] | undefined = Array.from({ length: 400_000 }, (_, i) => ({
    a: `x${i}`,
    b: [i, i + 1],
    c: { d: i },
  }));
  const survivors = burst.filter((_, i) => i % 50 === 0);
  for (let i = 0; i < 50; i++) idle.activity(); // the burst
  const grown = process.memoryUsage().heapTotal;
  burst = undefined;
  // then one activity every 60 ms (an observer's polling): at most 2 per 100 ms window
  for (let i = 0; i < 10; i++) {
    idle.activity();
    await sleep(60);
  }
  const after = process.memoryUsage().heapTotal;
  assert.ok(after < grown / 2, `heapTotal ${Math.round(grown / 1e6)} MB -> ${Math.round(after / 1e6)} MB`);
  assert.equal(survivors.length, 8_000);
  idle.stop();
});

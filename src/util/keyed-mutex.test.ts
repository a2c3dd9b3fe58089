import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKeyedMutex } from './keyed-mutex.ts';

it('runs one at a time per key, in order, across failures; other keys run alongside', async () => {
  const m = createKeyedMutex();
  const log: string[] = [];
  const job = (key: string, name: string, ms: number, fail = false) =>
    m.run(key, async () => {
      log.push(`${name}+`);
      await sleep(ms);
      log.push(`${name}-`);
      if (fail) throw new Error(name);
      return name;
    });
  const results = await Promise.allSettled([job('a', 'a1', 30, true), job('a', 'a2', 5), job('b', 'b1', 10)]);
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    ['a1', 'a2', 'b1'],
  );
  // a2 starts only after a1 ended (even though a1 failed); b1 ran while a1 was running
  assert.ok(log.indexOf('a2+') > log.indexOf('a1-'), log.join(' '));
  assert.ok(log.indexOf('b1+') < log.indexOf('a1-'), log.join(' '));
  assert.equal(m.size, 0);
});

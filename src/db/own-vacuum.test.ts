import assert from 'node:assert/strict';
import { test } from 'node:test';
import { targetOf } from './local-writes.ts';
import { vacuumNeed } from './own-vacuum.ts';

test("vacuumNeed: autovacuum's default formulas (dead rows, inserts since the last vacuum, changes since the last analyze)", () => {
  const s = { table: 't', live: 1000, dead: 0, modifiedSinceAnalyze: 0, insertedSinceVacuum: 0 };
  assert.equal(vacuumNeed(s), undefined);
  assert.equal(vacuumNeed({ ...s, dead: 250 }), undefined, '250 = 50 + 0.2 × 1000: not over');
  assert.equal(vacuumNeed({ ...s, dead: 251 }), 'vacuum');
  assert.equal(
    vacuumNeed({ ...s, insertedSinceVacuum: 1201 }),
    'vacuum',
    'an insert-only table is vacuumed too (freezing)',
  );
  assert.equal(vacuumNeed({ ...s, modifiedSinceAnalyze: 151 }), 'analyze');
  assert.equal(vacuumNeed({ ...s, live: 0, dead: 51 }), 'vacuum');
});

test('VACUUM and ANALYZE count as no write (no cache of svcd is dropped for them); other statements keep their meaning', () => {
  assert.equal(targetOf('vacuum (analyze) "operations"'), 'read');
  assert.equal(targetOf('analyze "operations"'), 'read');
  assert.equal(targetOf('explain analyze delete from "operations" where true'), 'any');
  assert.deepEqual(targetOf('delete from "operations" where "id" = $1'), { table: 'operations', kind: 'delete' });
});

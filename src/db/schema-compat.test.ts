import assert from 'node:assert/strict';
import { test } from 'node:test';
import { floorOf, judgeSchema, type LocalSchema, SchemaTooNewError } from './schema-compat.ts';

const local: LocalSchema = {
  entries: [
    { idx: 0, when: 100, tag: '0000_init' },
    { idx: 1, when: 200, tag: '0001_split' },
    { idx: 2, when: 300, tag: '0002_add' },
  ],
  breaking: ['0001_split'],
};

test('the floor is the newest breaking migration this svcd has', () => {
  assert.equal(floorOf(local), 1);
  assert.equal(floorOf({ ...local, breaking: [] }), -1);
});

test('a database at or behind this svcd, or ahead but still compatible, is run on; one needing more is refused', () => {
  assert.equal(judgeSchema(local, [], undefined), 0, 'a new database');
  assert.equal(judgeSchema(local, [100, 200], 1), 0, 'behind: migrated forward');
  assert.equal(judgeSchema(local, [100, 200, 300, 400, 500], 2), 2, 'ahead by two additive migrations');
  assert.throws(
    () => judgeSchema(local, [100, 200, 300, 400], 3),
    (e: unknown) =>
      e instanceof SchemaTooNewError &&
      /needs migration 3 or later, and this svcd's newest is 2 \(0002_add\)/.test(e.message),
  );
});

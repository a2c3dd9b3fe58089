import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BOOL_VALUE, parseBool, parseOptionalBool } from './parse-bool.ts';

test('parseBool: LXD true values in any case; others false; unset and empty give the default', () => {
  for (const v of ['true', 'TRUE', 'True', '1', 'yes', 'YES', 'on', 'On']) assert.equal(parseBool(v), true, v);
  for (const v of ['false', '0', 'no', 'off', 'tru', 'enabled', ' true', '2'])
    assert.equal(parseBool(v, true), false, v);
  assert.equal(parseBool(undefined), false);
  assert.equal(parseBool('', true), true);
  assert.equal(parseBool(undefined, true), true);
});

test('parseOptionalBool keeps unset apart from false', () => {
  assert.equal(parseOptionalBool(undefined), undefined);
  assert.equal(parseOptionalBool(''), undefined);
  assert.equal(parseOptionalBool('Yes'), true);
  assert.equal(parseOptionalBool('off'), false);
});

test('BOOL_VALUE accepts exactly the eight words, in any case', () => {
  for (const v of ['true', 'false', '1', '0', 'yes', 'no', 'on', 'OFF']) assert.ok(BOOL_VALUE.test(v), v);
  for (const v of ['', 'y', 'n', '2', 'truee']) assert.ok(!BOOL_VALUE.test(v), v);
});

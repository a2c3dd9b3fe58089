import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileFilter, lookup } from './filter.ts';

const c = {
  name: 'web1',
  status: 'Running',
  config: { 'user.tier': 'Front', 'image.os': 'Debian' },
  nested: { deep: { x: 1 } },
};

test('lookup walks dotted keys, including map keys that contain dots', () => {
  assert.equal(lookup(c, 'name'), 'web1');
  assert.equal(lookup(c, 'config.user.tier'), 'Front');
  assert.equal(lookup(c, 'nested.deep.x'), 1);
  assert.equal(lookup(c, 'config.missing'), undefined);
});

test('eq/ne are case-insensitive; and/or/not combine left to right', () => {
  const f = (s: string) => compileFilter(s)!(c);
  assert.equal(f('status eq running'), true, 'lxc list sends lower case');
  assert.equal(f('status eq stopped'), false);
  assert.equal(f('status ne stopped'), true);
  assert.equal(f('config.user.tier eq front and name eq WEB1'), true);
  assert.equal(f('name eq nope or config.image.os eq debian'), true);
  assert.equal(f('not name eq web1'), false);
  assert.equal(f('name eq "web1"'), true, 'quoted values');
  assert.equal(f('missing eq x'), false);
});

test('an empty filter is no filter; malformed filters throw a 400 HttpError', () => {
  assert.equal(compileFilter(''), undefined);
  assert.equal(compileFilter('   '), undefined);
  assert.equal(compileFilter(undefined), undefined);
  for (const bad of ['name', 'name eq', 'name like x', 'name eq x also y eq z']) {
    assert.throws(
      () => compileFilter(bad),
      (e: { status?: number }) => e.status === 400,
      bad,
    );
  }
});

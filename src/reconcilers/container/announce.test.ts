import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ContainerRow } from '../../desired/schema/index.ts';
import { computeAnnouncements, specDigest } from './announce.ts';

const row = (over: Partial<ContainerRow> = {}) =>
  ({
    name: 'c1',
    description: '',
    architecture: 'x86_64',
    ephemeral: false,
    profiles: ['default'],
    config: { 'limits.cpu': '1' },
    devices: {},
    ...over,
  }) as ContainerRow;

test('created once, then renamed and updated as they happen', () => {
  const first = computeAnnouncements(undefined, row());
  assert.deepEqual(first.events, [{ action: 'container-created' }]);
  assert.deepEqual(computeAnnouncements(first.next, row()).events, []);
  assert.deepEqual(computeAnnouncements(first.next, row({ name: 'c2' })).events, [
    { action: 'container-renamed', context: { old_name: 'c1' } },
  ]);
  assert.deepEqual(computeAnnouncements(first.next, row({ config: { 'limits.cpu': '2' } })).events, [
    { action: 'container-updated' },
  ]);
  assert.deepEqual(
    computeAnnouncements(first.next, row({ name: 'c2', ephemeral: true })).events.map((e) => e.action),
    ['container-renamed', 'container-updated'],
  );
});

test('the digest ignores key order and volatile keys, not profile order', () => {
  assert.equal(
    specDigest(row({ config: { a: '1', b: '2' } })),
    specDigest(row({ config: { b: '2', a: '1', 'volatile.x': 'y' } })),
  );
  assert.notEqual(specDigest(row({ profiles: ['a', 'b'] })), specDigest(row({ profiles: ['b', 'a'] })));
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashBackoffMs, stableOf, upTransitionAction } from './container-transitions.ts';

test('LXC states map to the stable state they belong to', () => {
  assert.deepEqual(
    ['RUNNING', 'STOPPING', 'FREEZING', 'THAWED', 'FROZEN', 'STOPPED', 'STARTING', 'ABORTING', 'bogus'].map(stableOf),
    ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING', 'FROZEN', 'STOPPED', 'STOPPED', 'STOPPED', 'STOPPED'],
  );
});

test('lifecycle actions of transitions while up', () => {
  assert.equal(upTransitionAction('STOPPED', 'RUNNING', true, false), 'container-started');
  assert.equal(upTransitionAction('STOPPED', 'RUNNING', true, true), 'container-restarted');
  assert.equal(upTransitionAction('RUNNING', 'RUNNING', true, false), 'container-restarted');
  assert.equal(upTransitionAction('RUNNING', 'FROZEN', false, false), 'container-paused');
  assert.equal(upTransitionAction('FROZEN', 'RUNNING', false, false), 'container-resumed');
  assert.equal(upTransitionAction('RUNNING', 'RUNNING', false, false), undefined);
  assert.equal(upTransitionAction('RUNNING', 'STOPPED', false, false), undefined);
});

test('crash loop backoff: at once, then doubling up to a minute', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 8, 20].map(crashBackoffMs), [0, 0, 1_000, 2_000, 4_000, 60_000, 60_000]);
});

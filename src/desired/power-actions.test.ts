import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusedPowerAction } from './power-actions.ts';

const RUNNING = 'The instance is already running';
const STOPPED = 'The instance is already stopped';

test('refused only when desired power and observed state agree there is nothing to do (LXD 5.0 messages)', () => {
  // start
  assert.equal(refusedPowerAction('start', 'running', 'RUNNING'), RUNNING);
  assert.equal(refusedPowerAction('start', 'frozen', 'FROZEN'), RUNNING, 'a frozen container is running for start');
  assert.equal(refusedPowerAction('start', 'stopped', undefined), undefined);
  assert.equal(refusedPowerAction('start', 'stopped', 'STOPPED'), undefined);
  // stop and restart
  assert.equal(refusedPowerAction('stop', 'stopped', 'STOPPED'), STOPPED);
  assert.equal(refusedPowerAction('stop', 'stopped', undefined), STOPPED, 'no runtime row: never seen up');
  assert.equal(refusedPowerAction('restart', 'stopped', 'STOPPED'), STOPPED);
  assert.equal(refusedPowerAction('stop', 'running', 'RUNNING'), undefined);
  assert.equal(refusedPowerAction('stop', 'frozen', 'FROZEN'), undefined);
  assert.equal(refusedPowerAction('restart', 'running', 'RUNNING'), undefined);
  // freeze and unfreeze
  assert.equal(refusedPowerAction('freeze', 'stopped', 'STOPPED'), "The instance isn't running");
  assert.equal(refusedPowerAction('freeze', 'frozen', 'FROZEN'), 'The container is already frozen');
  assert.equal(refusedPowerAction('freeze', 'running', 'RUNNING'), undefined);
  assert.equal(refusedPowerAction('unfreeze', 'stopped', undefined), "The container isn't running");
  assert.equal(refusedPowerAction('unfreeze', 'running', 'RUNNING'), 'The container is already running');
  assert.equal(refusedPowerAction('unfreeze', 'frozen', 'FROZEN'), undefined);
});

test('a change still converging is never refused: the newest desire wins', () => {
  // A stop not carried out yet: start (and freeze, restart) still apply.
  assert.equal(refusedPowerAction('start', 'stopped', 'RUNNING'), undefined);
  assert.equal(refusedPowerAction('restart', 'stopped', 'RUNNING'), undefined);
  assert.equal(
    refusedPowerAction('stop', 'stopped', 'RUNNING'),
    undefined,
    'a second (e.g. forced) stop of a stop under way',
  );
  // A start not carried out yet (or a crashed container in backoff): stop cancels it; start and restart still apply.
  assert.equal(refusedPowerAction('stop', 'running', 'STOPPED'), undefined);
  assert.equal(refusedPowerAction('stop', 'running', undefined), undefined);
  assert.equal(refusedPowerAction('start', 'running', 'STOPPED'), undefined);
  assert.equal(refusedPowerAction('freeze', 'running', 'STOPPED'), undefined);
  // A freeze or unfreeze under way.
  assert.equal(refusedPowerAction('unfreeze', 'frozen', 'RUNNING'), undefined);
  assert.equal(refusedPowerAction('freeze', 'running', 'FROZEN'), undefined);
  assert.equal(refusedPowerAction('unfreeze', 'running', 'FROZEN'), undefined);
  // Transitional LXC states settle nothing.
  for (const state of ['STARTING', 'STOPPING', 'ABORTING', 'FREEZING', 'THAWED'])
    for (const action of ['start', 'stop', 'restart', 'freeze', 'unfreeze'] as const)
      for (const desired of ['running', 'stopped', 'frozen'] as const)
        assert.equal(refusedPowerAction(action, desired, state), undefined, `${action} ${desired} ${state}`);
});

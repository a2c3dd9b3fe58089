import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeBootPlan, computeStopGroups } from './boot-plan.ts';

const row = (id: string, power: 'running' | 'stopped', config: Record<string, string> = {}) => ({
  id,
  name: id,
  power,
  config,
  deletingAt: null,
});

test('autostart=true always starts, false never, unset follows the last desired state; priority then name order', () => {
  const rows = [
    row('a', 'running'),
    row('b', 'stopped', { 'boot.autostart': 'true', 'boot.autostart.priority': '5', 'boot.autostart.delay': '2' }),
    row('c', 'running', { 'boot.autostart': 'false' }),
    row('d', 'stopped'),
    row('e', 'running', { 'boot.autostart.priority': '5' }),
    row('f', 'running'),
  ];
  const plan = computeBootPlan(
    rows,
    (id) => (id === 'f' ? 'RUNNING' : 'STOPPED'),
    (r) => rows.find((x) => x.id === r.id)!.config,
  );
  assert.deepEqual(plan.setPower, [
    { id: 'b', power: 'running' },
    { id: 'c', power: 'stopped' },
  ]);
  assert.deepEqual(plan.order, [
    { id: 'b', priority: 5, delayMs: 2000 },
    { id: 'e', priority: 5, delayMs: 0 },
    { id: 'a', priority: 0, delayMs: 0 },
  ]);
});

test('stop groups: higher boot.stop.priority first, equal ones together, each with its timeout', () => {
  const groups = computeStopGroups([
    { id: 'x', config: {} },
    { id: 'y', config: { 'boot.stop.priority': '10', 'boot.host_shutdown_timeout': '5' } },
    { id: 'z', config: { 'boot.stop.priority': '10' } },
  ]);
  assert.deepEqual(groups, [
    {
      priority: 10,
      members: [
        { id: 'y', timeoutMs: 5000 },
        { id: 'z', timeoutMs: 30000 },
      ],
    },
    { priority: 0, members: [{ id: 'x', timeoutMs: 30000 }] },
  ]);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMonitorLine } from './monitor.ts';

test('parses state changes and exits', () => {
  assert.deepEqual(parseMonitorLine("'c1' changed state to [STARTING]"), {
    type: 'state',
    name: 'c1',
    state: 'STARTING',
  });
  assert.deepEqual(parseMonitorLine("'web-01' changed state to [RUNNING]\n"), {
    type: 'state',
    name: 'web-01',
    state: 'RUNNING',
  });
  assert.deepEqual(parseMonitorLine("'c1' changed state to [THAWED]"), { type: 'state', name: 'c1', state: 'THAWED' });
  assert.deepEqual(parseMonitorLine("'c1' exited with status [0]"), { type: 'exit', name: 'c1', status: 0 });
  assert.deepEqual(parseMonitorLine("'c1' exited with status [137]"), { type: 'exit', name: 'c1', status: 137 });
});

test('ignores everything else', () => {
  assert.equal(parseMonitorLine(''), undefined);
  assert.equal(parseMonitorLine("'c1' changed state to [NAPPING]"), undefined);
  assert.equal(parseMonitorLine('lxc-monitor: monitor.c: something failed'), undefined);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverPidOf } from './shutdown.ts';

test("the daemon's pid comes from GET /1.0's environment.server_pid", () => {
  assert.equal(serverPidOf({ metadata: { environment: { server_pid: 4242 } } }), 4242);
  assert.equal(serverPidOf({ metadata: { environment: {} } }), undefined);
  assert.equal(serverPidOf({ metadata: { environment: { server_pid: '4242' } } }), undefined);
  assert.equal(serverPidOf({ metadata: { environment: { server_pid: 0 } } }), undefined);
  assert.equal(serverPidOf(undefined), undefined);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argsKey, argValue, forwarderArgs, forwarderKey } from './forwarder-args.ts';
import type { ForwarderSpec } from './types.ts';

const base: ForwarderSpec = {
  containerId: 'c1',
  device: 'web',
  listenNs: 0,
  listen: 'tcp:127.0.0.1:8080',
  connectNs: 4242,
  connect: 'tcp:127.0.0.1:80',
  proxyProtocol: false,
  exitWith: 4242,
};

test('forwarderArgs: the minimal argv', () => {
  assert.deepEqual(forwarderArgs(base), [
    '--listen-ns',
    '0',
    '--listen',
    'tcp:127.0.0.1:8080',
    '--connect-ns',
    '4242',
    '--connect',
    'tcp:127.0.0.1:80',
    '--exit-with',
    '4242',
  ]);
});

test('forwarderArgs: every option, in a fixed order', () => {
  const spec: ForwarderSpec = {
    ...base,
    listenNs: 4242,
    listen: 'unix:/run/a.sock',
    connectNs: 0,
    connect: 'unix:@b',
    listenUid: 1000,
    listenGid: 0,
    listenMode: '0660',
    dropUid: 65534,
    dropGid: 65534,
    proxyProtocol: true,
    exitWith: 0,
  };
  assert.deepEqual(forwarderArgs(spec), [
    '--listen-ns',
    '4242',
    '--listen',
    'unix:/run/a.sock',
    '--connect-ns',
    '0',
    '--connect',
    'unix:@b',
    '--listen-uid',
    '1000',
    '--listen-gid',
    '0',
    '--listen-mode',
    '0660',
    '--drop-uid',
    '65534',
    '--drop-gid',
    '65534',
    '--proxy-protocol',
  ]);
});

test('forwarderKey: the same spec the same key; any change of the argv another', () => {
  assert.equal(forwarderKey(base), forwarderKey({ ...base, containerId: 'other', device: 'other' }));
  assert.equal(forwarderKey(base), argsKey(forwarderArgs(base)));
  assert.notEqual(forwarderKey(base), forwarderKey({ ...base, exitWith: 4243 }));
  assert.notEqual(forwarderKey(base), forwarderKey({ ...base, proxyProtocol: true }));
  assert.match(forwarderKey(base), /^[0-9a-f]{32}$/);
});

test("argValue: a flag's value or undefined", () => {
  assert.equal(argValue(forwarderArgs(base), '--listen'), 'tcp:127.0.0.1:8080');
  assert.equal(argValue(forwarderArgs(base), '--drop-uid'), undefined);
});

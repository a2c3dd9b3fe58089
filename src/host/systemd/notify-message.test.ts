import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSdNotify } from './sd-notify.ts';
import { notifyArgs, notifyMessage } from './notify-message.ts';

test('READY names the main pid, STOPPING stands alone', () => {
  assert.equal(notifyMessage('ready', 4321), 'READY=1\nMAINPID=4321');
  assert.equal(notifyMessage('stopping', 4321), 'STOPPING=1');
});

test('helper argv: socket, pid, message; a path or an abstract name only', () => {
  assert.deepEqual(notifyArgs('/run/systemd/notify', 77, 'ready'), [
    '/run/systemd/notify',
    '77',
    'READY=1\nMAINPID=77',
  ]);
  assert.deepEqual(notifyArgs('@/org/freedesktop/systemd1/notify/123', 77, 'stopping'), [
    '@/org/freedesktop/systemd1/notify/123',
    '77',
    'STOPPING=1',
  ]);
  assert.throws(() => notifyArgs('relative.sock', 77, 'ready'), /not a unix socket address/);
  assert.throws(() => notifyArgs(`/${'x'.repeat(120)}`, 77, 'ready'), /not a unix socket address/);
  assert.throws(() => notifyArgs('/run/n', 0, 'ready'), /not a pid/);
});

test('sends only under systemd (NOTIFY_SOCKET set) and never rejects', async () => {
  const calls: unknown[][] = [];
  const warnings: string[] = [];
  const log = { warn: (_o: object, msg: string) => void warnings.push(msg) };
  const run = async (file: string, args: readonly string[]) => void calls.push([file, ...args]);
  await createSdNotify({ socket: undefined, pid: 5, helper: '/h', run, log }).send('ready');
  assert.deepEqual(calls, []);
  await createSdNotify({ socket: '/run/n', pid: 5, helper: '/h', run, log }).send('ready');
  assert.deepEqual(calls, [['/h', '/run/n', '5', 'READY=1\nMAINPID=5']]);
  const failing = async () => {
    throw new Error('boom');
  };
  await createSdNotify({ socket: '/run/n', pid: 5, helper: '/h', run: failing, log }).send('stopping');
  assert.deepEqual(warnings, ['sd_notify failed']);
});

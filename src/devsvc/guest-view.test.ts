import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  devsvcEnabled,
  devsvcImagesEnabled,
  guestChanges,
  guestConfigOf,
  parseGuestEventTypes,
  renderMetaData,
} from './guest-view.ts';

test('devsvc is on unless turned off; image export is off unless turned on', () => {
  assert.equal(devsvcEnabled({}), true);
  assert.equal(devsvcEnabled({ 'security.devsvc': '' }), true);
  assert.equal(devsvcEnabled({ 'security.devsvc': 'false' }), false);
  assert.equal(devsvcEnabled({ 'security.devsvc': 'true' }), true);
  assert.equal(devsvcImagesEnabled({}), false);
  assert.equal(devsvcImagesEnabled({ 'security.devsvc.images': 'true' }), true);
});

test('only user.* keys are shown to the guest, sorted', () => {
  assert.deepEqual(
    guestConfigOf({
      'user.b': '2',
      'security.privileged': 'true',
      'user.a': '1',
      'volatile.x': 'y',
      'environment.user.c': 'z',
    }),
    { 'user.a': '1', 'user.b': '2' },
  );
});

test('meta-data: name as instance id and hostname, then user.meta-data', () => {
  assert.equal(renderMetaData('web', {}), '#cloud-config\ninstance-id: web\nlocal-hostname: web\n');
  assert.equal(
    renderMetaData('web', { 'user.meta-data': 'foo: bar' }),
    '#cloud-config\ninstance-id: web\nlocal-hostname: web\nfoo: bar\n',
  );
  assert.equal(
    renderMetaData('web', { 'user.meta-data': 'foo: bar\n' }),
    '#cloud-config\ninstance-id: web\nlocal-hostname: web\nfoo: bar\n',
  );
});

test('changes: user.* key set, changed and removed; other keys silent; devices added, updated, removed', () => {
  const prev = {
    config: { 'user.a': '1', 'user.gone': 'x', 'limits.cpu': '1' },
    devices: {
      root: { type: 'disk', path: '/', pool: 'default' },
      old: { type: 'none' },
      tun: { type: 'unix-char', path: '/dev/net/tun' },
    },
  };
  const next = {
    config: { 'user.a': '2', 'user.new': 'y', 'limits.cpu': '2' },
    devices: {
      root: { type: 'disk', path: '/', pool: 'default' },
      tun: { type: 'unix-char', path: '/dev/tun' },
      kvm: { type: 'unix-char', path: '/dev/kvm' },
    },
  };
  assert.deepEqual(guestChanges(prev, next), [
    { type: 'config', metadata: { key: 'user.a', old_value: '1', value: '2' } },
    { type: 'config', metadata: { key: 'user.gone', old_value: 'x', value: '' } },
    { type: 'config', metadata: { key: 'user.new', old_value: '', value: 'y' } },
    { type: 'device', metadata: { action: 'added', name: 'kvm', config: { type: 'unix-char', path: '/dev/kvm' } } },
    { type: 'device', metadata: { action: 'removed', name: 'old', config: { type: 'none' } } },
    { type: 'device', metadata: { action: 'updated', name: 'tun', config: { type: 'unix-char', path: '/dev/tun' } } },
  ]);
  assert.deepEqual(guestChanges(next, next), []);
});

test('event type filter', () => {
  assert.deepEqual([...(parseGuestEventTypes(null) as Set<string>)], ['config', 'device']);
  assert.deepEqual([...(parseGuestEventTypes('device') as Set<string>)], ['device']);
  assert.match(parseGuestEventTypes('config,lifecycle') as string, /Unknown event type "lifecycle"/);
});

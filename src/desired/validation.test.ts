import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeConfig, validateConfig } from './config-keys.ts';
import { validateDevices } from './devices.ts';
import { ValidationError } from './errors.ts';
import { instanceConfigKeys } from './instance-config.ts';
import { validateContainerName, validateName } from './names.ts';

test('entity names: 1..64 printable ASCII, no path or URL separators, not . or ..', () => {
  for (const ok of ['web', 'a.b', 'x_y-z', 'A1', 'a'.repeat(64)]) assert.equal(validateName('Profile', ok), ok);
  for (const bad of ['', 'a/b', 'a b', '..', '.', 'a'.repeat(65), 'tab\t', 'ünï', 'a:b', 'a,b', 'a?b', 'a%2f', 5])
    assert.throws(() => validateName('Profile', bad), ValidationError, String(bad));
});

test('container names are host names', () => {
  assert.equal(validateContainerName('web-1'), 'web-1');
  for (const bad of ['1web', '-web', 'web-', 'we_b', 'a.b', 'a'.repeat(65)]) assert.throws(() => validateContainerName(bad), ValidationError, bad);
});

test('instance config: known keys with valid values pass; unknown, read-only or bad values are refused naming the key', () => {
  validateConfig('profile', {
    'limits.cpu': '0-3,6',
    'limits.memory': '512MiB',
    'limits.memory.swap': 'false',
    'limits.kernel.nofile': '1024:4096',
    'security.privileged': 'true',
    'raw.id_map': 'both 1000 1000\nuid 50-60 500-510',
    'user.anything.here': 'x',
    'environment.FOO': 'bar',
    'boot.autostart.priority': '-3',
  }, instanceConfigKeys);
  const refuse = (config: Record<string, string>, re: RegExp) =>
    assert.throws(() => validateConfig('profile', config, instanceConfigKeys), (e: Error) => e instanceof ValidationError && re.test(e.message));
  refuse({ 'limits.bogus': '1' }, /Unknown profile config key "limits.bogus"/);
  refuse({ 'limits.memory': 'lots' }, /limits.memory/);
  refuse({ 'limits.cpu': 'two' }, /limits.cpu/);
  refuse({ 'security.privileged': 'maybe' }, /security.privileged/);
  refuse({ 'raw.id_map': 'everything 1 2' }, /raw.id_map/);
  refuse({ 'volatile.eth0.hwaddr': 'x' }, /read-only/);
  refuse({ 'user.': 'x' }, /Unknown/);
});

test('devices: per-type properties and required fields', () => {
  validateDevices({
    root: { type: 'disk', path: '/', pool: 'default' },
    data: { type: 'disk', path: '/srv', source: '/data', propagation: 'rshared' },
    eth0: { type: 'nic', nictype: 'bridged', parent: 'br0' },
    tty: { type: 'unix-char', path: '/dev/ttyS0' },
  });
  const refuse = (devices: Record<string, Record<string, string>>, re: RegExp) =>
    assert.throws(() => validateDevices(devices), (e: Error) => e instanceof ValidationError && re.test(e.message));
  refuse({ x: { type: 'gpu' } }, /unsupported device type "gpu"/);
  refuse({ x: { path: '/' } }, /has no type/);
  refuse({ x: { type: 'disk', source: '/a' } }, /"path" is required/);
  refuse({ x: { type: 'disk', path: '/' } }, /needs a "pool"/);
  refuse({ x: { type: 'disk', path: '/a/../b', source: '/s' } }, /absolute path/);
  refuse({ x: { type: 'nic', nictype: 'bridged' } }, /"parent"/);
  refuse({ x: { type: 'nic', parent: 'br0', colour: 'red' } }, /unknown property "colour"/);
  refuse({ 'bad name!': { type: 'none' } }, /Invalid device name/);
  refuse({ x: { type: 'unix-block' } }, /"path" or "source"/);
});

test('PATCH merge: given keys replace, "" removes', () => {
  assert.deepEqual(mergeConfig({ a: '1', b: '2' }, { b: '', c: '3' }), { a: '1', c: '3' });
  assert.deepEqual(mergeConfig({ a: '1' }, undefined), { a: '1' });
});

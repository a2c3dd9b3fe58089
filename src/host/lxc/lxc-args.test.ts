import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lxcArgs, parseLxcInfo } from './lxc-args.ts';

const r = { name: 'c1', lxcPath: '/var/lib/svcd/lxc' };

describe('lxcArgs', () => {
  it('builds argv arrays', () => {
    assert.deepEqual(lxcArgs.start(r, '/var/lib/svcd/lxc/c1/config'), [
      '-d',
      '-n',
      'c1',
      '-P',
      '/var/lib/svcd/lxc',
      '-f',
      '/var/lib/svcd/lxc/c1/config',
    ]);
    assert.deepEqual(lxcArgs.shutdown(r, 30), ['-n', 'c1', '-P', '/var/lib/svcd/lxc', '-t', '30', '--nokill']);
    assert.deepEqual(lxcArgs.shutdown(r, 0.2), ['-n', 'c1', '-P', '/var/lib/svcd/lxc', '-t', '1', '--nokill']);
    assert.deepEqual(lxcArgs.kill(r), ['-n', 'c1', '-P', '/var/lib/svcd/lxc', '-k']);
    assert.deepEqual(lxcArgs.freeze(r), ['-n', 'c1', '-P', '/var/lib/svcd/lxc']);
    assert.deepEqual(lxcArgs.unfreeze(r), ['-n', 'c1', '-P', '/var/lib/svcd/lxc']);
    assert.deepEqual(lxcArgs.info(r), ['-n', 'c1', '-P', '/var/lib/svcd/lxc', '-s', '-p', '-H']);
    assert.deepEqual(lxcArgs.attach(r, ['/bin/busybox', 'id', '-u'], { PATH: '/bin', A: 'x y' }), [
      '-n',
      'c1',
      '-P',
      '/var/lib/svcd/lxc',
      '--clear-env',
      '--set-var',
      'PATH=/bin',
      '--set-var',
      'A=x y',
      '--',
      '/bin/busybox',
      'id',
      '-u',
    ]);
    assert.deepEqual(lxcArgs.attach(r, ['id'], {}, { uid: 1000, gid: 0 }), [
      '-n',
      'c1',
      '-P',
      '/var/lib/svcd/lxc',
      '--clear-env',
      '--uid',
      '1000',
      '--gid',
      '0',
      '--',
      'id',
    ]);
    assert.deepEqual(lxcArgs.monitor('/var/lib/svcd/lxc'), ['-P', '/var/lib/svcd/lxc', '-n', '.*']);
    assert.deepEqual(lxcArgs.monitor('/p', 'web-.*; rm -rf /'), ['-P', '/p', '-n', 'web-.*; rm -rf /']);
  });
});

describe('parseLxcInfo', () => {
  it('reads state and pid', () => {
    assert.deepEqual(parseLxcInfo('State:          RUNNING\nPID:            7456\n'), { state: 'RUNNING', pid: 7456 });
    assert.deepEqual(parseLxcInfo('State:          FROZEN\nPID:            12'), { state: 'FROZEN', pid: 12 });
    assert.deepEqual(parseLxcInfo('State:          STOPPED\n'), { state: 'STOPPED' });
    assert.deepEqual(parseLxcInfo('STOPPED'), { state: 'STOPPED' });
  });
  it('refuses what it does not understand', () => {
    assert.throws(() => parseLxcInfo(''), /cannot read a container state/);
    assert.throws(() => parseLxcInfo('State: SLEEPY'), /cannot read/);
  });
});

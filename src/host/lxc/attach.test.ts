import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attachCommand, exitStatus, mapsHostRoot, uidMapHasHostRoot } from './attach.ts';

const ref = { name: 'c1', lxcPath: '/var/lib/svcd/containers', env: { PATH: '/bin' } };

describe('exec through lxc-attach', () => {
  it('reports exit codes as they are and deaths by signal as 128 + N, as LXD does', () => {
    assert.equal(exitStatus({ exitCode: 0 }), 0);
    assert.equal(exitStatus({ exitCode: 127 }), 127);
    assert.equal(exitStatus({ signal: 'SIGTERM' }), 143);
    assert.equal(exitStatus({ signal: 'SIGKILL' }), 137);
  });

  it('runs the command itself by default, entering at the home directory through its own working directory', async () => {
    const { args, hostCwd } = attachCommand({ ...ref, command: ['ls', '-l'], cwd: '' });
    assert.deepEqual(args, [
      '-n',
      'c1',
      '-P',
      '/var/lib/svcd/containers',
      '--clear-env',
      '--set-var',
      'PATH=/bin',
      '--',
      'ls',
      '-l',
    ]);
    assert.ok(hostCwd === '/root' || hostCwd === '/');
    assert.equal(
      attachCommand({ ...ref, command: ['id'], cwd: '', uid: 1000, gid: 5 }).hostCwd,
      '/',
      'no home for other users',
    );
  });

  it('with the container log file, lxc-attach logs only errors there', async () => {
    const { args } = attachCommand({ ...ref, command: ['true'], cwd: '', logFile: '/var/log/c1/lxc.log' });
    assert.deepEqual(args.slice(0, 8), [
      '-n',
      'c1',
      '-P',
      '/var/lib/svcd/containers',
      '--logfile',
      '/var/log/c1/lxc.log',
      '--logpriority',
      'ERROR',
    ]);
  });
  it('changes to an explicit working directory through sh, the path and command passed as arguments', async () => {
    const { args } = attachCommand({ ...ref, command: ['ls', '$(reboot)'], cwd: '/tmp/a b', uid: 1000, gid: 5 });
    assert.deepEqual(args.slice(args.indexOf('--uid')), [
      '--uid',
      '1000',
      '--gid',
      '5',
      '--',
      '/bin/sh',
      '-c',
      'cd -- "$1" || exit 1; shift; exec "$@"',
      'sh',
      '/tmp/a b',
      'ls',
      '$(reboot)',
    ]);
  });

  it('tells user namespaces that map host root (privileged, identity maps) from those that do not', async () => {
    assert.equal(uidMapHasHostRoot('         0          0 4294967295\n'), true, 'the host namespace');
    assert.equal(uidMapHasHostRoot('         0    1000000      65536\n'), false, 'an unprivileged container');
    assert.equal(
      uidMapHasHostRoot('0 1000000 1000\n1000 1000 1\n1001 1001001 64535\n'),
      false,
      'raw.idmap of a user uid',
    );
    assert.equal(uidMapHasHostRoot('0 1000000 1000\n1000 0 1\n'), true, 'raw.idmap giving host root');
    assert.equal(uidMapHasHostRoot(''), true, 'unreadable: assume host root');
    assert.equal(uidMapHasHostRoot('garbage\n'), true);
    assert.equal(mapsHostRoot(process.pid), true, 'this process runs in the host user namespace');
    assert.equal(mapsHostRoot(2 ** 22 + 12345), true, 'no such process');
  });
});

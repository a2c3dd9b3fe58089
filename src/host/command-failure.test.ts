import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { isTerminalError, terminalMessageOf } from '../reconcilers/runtime/terminal-error.ts';
import { classifierFor, classifyFailure, FAILURE_CLASSIFIERS } from './command-failure.ts';
import { HostCommandError, runCommand } from './exec.ts';
import { stopSpawnHelper } from './spawn/spawn-helper.ts';

const failed = (
  exitCode: number | undefined,
  stderr: string,
  extra: { timedOut?: boolean; canceled?: boolean; notStarted?: boolean } = {},
) => ({ exitCode, stderr, ...extra });

describe('host command failure classifiers', () => {
  it('tar: a damaged or cut-short archive is terminal (stderr as GNU tar 1.34 writes it), host conditions transient', () => {
    const terminal = [
      'gzip: stdin: unexpected end of file\ntar: Unexpected EOF in archive\ntar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now',
      'tar: Unexpected EOF in archive\ntar: rmtlseek not stopped at a record boundary\ntar: Error is not recoverable: exiting now',
      'tar: /var/lib/svcd/images/abc: Cannot open: No such file or directory\ntar: Error is not recoverable: exiting now',
      'tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors',
      'xz: (stdin): Unexpected end of input\ntar: Unexpected EOF in archive',
      'gzip: stdin: not in gzip format\ntar: Child returned status 1\ntar: Error is not recoverable: exiting now',
      "tar: Member name contains '..'\ntar: Exiting with failure status due to previous errors",
      "tar: rootfs/bin/sh: Cannot hard link to 'rootfs/bin/busybox': No such file or directory",
    ];
    for (const stderr of terminal) assert.equal(classifyFailure('tar', failed(2, stderr)), 'terminal', stderr);
    const transient = [
      'tar: rootfs/usr/lib/libc.so.6: Cannot write: No space left on device\ntar: Exiting with failure status due to previous errors',
      'tar: rootfs/x: Cannot open: Disk quota exceeded',
      'tar: rootfs/bin: Cannot mkdir: Input/output error',
    ];
    for (const stderr of transient) assert.equal(classifyFailure('tar', failed(2, stderr)), 'transient', stderr);
    // Whatever else makes tar exit 2 on the same archive comes back on a retry.
    assert.equal(classifyFailure('/usr/bin/tar', failed(2, 'tar: something new')), 'terminal');
  });

  it('every tool: a timeout, a cancellation or a kill by signal is transient; a tool that cannot be started is terminal', () => {
    for (const tool of Object.keys(FAILURE_CLASSIFIERS)) {
      const c = classifierFor(tool);
      assert.equal(c(failed(undefined, '', { timedOut: true })), 'transient', tool);
      assert.equal(c(failed(undefined, '', { canceled: true })), 'transient', tool);
      assert.equal(c(failed(undefined, '')), 'transient', `${tool} killed by a signal`);
      assert.equal(c(failed(undefined, '', { notStarted: true })), 'terminal', `${tool} not installed`);
      assert.equal(c(failed(1, 'write error: No space left on device')), 'transient', `${tool} ENOSPC`);
    }
  });

  it('unsquashfs: a bad superblock is terminal', () => {
    assert.equal(
      classifyFailure(
        'unsquashfs',
        failed(1, "Read on filesystem failed because EOF\nFATAL ERROR: Can't find a valid SQUASHFS superblock on g"),
      ),
      'terminal',
    );
  });

  it('copies: cp and rsync errors of the moment are transient; rsync usage and protocol errors terminal', () => {
    assert.equal(
      classifyFailure('cp', failed(1, "cp: cannot stat '/pool/images/x/.': No such file or directory")),
      'transient',
    );
    assert.equal(
      classifyFailure('rsync', failed(23, 'rsync error: some files/attrs were not transferred (code 23)')),
      'transient',
    );
    assert.equal(classifyFailure('rsync', failed(24, 'file has vanished')), 'transient');
    assert.equal(classifyFailure('rsync', failed(1, 'rsync: --bwlimit=x: invalid number (code 1)')), 'terminal');
    assert.equal(classifyFailure('rsync', failed(2, 'protocol incompatibility')), 'terminal');
  });

  it('storage: what the kernel or file system refuses is terminal, a busy target transient', () => {
    assert.equal(classifyFailure('mount', failed(32, "mount: /x: unknown filesystem type 'zfs'.")), 'terminal');
    assert.equal(
      classifyFailure(
        'mount',
        failed(
          32,
          'mount: /x: wrong fs type, bad option, bad superblock on /dev/loop3, missing codepage or helper program, or other error.',
        ),
      ),
      'terminal',
    );
    assert.equal(classifyFailure('umount', failed(32, 'umount: /x: target is busy.')), 'transient');
    assert.equal(
      classifyFailure(
        'losetup',
        failed(1, 'losetup: /pool.img: failed to set up loop device: No such file or directory'),
      ),
      'terminal',
    );
    assert.equal(classifyFailure('losetup', failed(1, 'losetup: cannot find an unused loop device')), 'transient');
    assert.equal(classifyFailure('btrfs', failed(1, 'ERROR: not a btrfs filesystem: /x')), 'terminal');
    assert.equal(
      classifyFailure('btrfs', failed(1, 'ERROR: cannot delete subvolume: Device or resource busy')),
      'transient',
    );
    assert.equal(
      classifyFailure('chattr', failed(1, 'chattr: Operation not supported while setting project on /x')),
      'terminal',
    );
    assert.equal(classifyFailure('mknod', failed(1, 'mknod: /x: Operation not permitted')), 'terminal');
    assert.equal(classifyFailure('mknod', failed(1, 'mknod: /x: File exists')), 'transient');
  });

  it('LXC: lxc-start refusing a config is terminal; stop, freeze, info and ls failures transient', () => {
    assert.equal(
      classifyFailure(
        'lxc-start',
        failed(1, 'lxc-start: c1: tools/lxc_start.c: main: 306 The container failed to start'),
      ),
      'terminal',
    );
    for (const tool of ['lxc-stop', 'lxc-freeze', 'lxc-unfreeze', 'lxc-info', 'lxc-ls', 'lxc-attach'])
      assert.equal(classifyFailure(tool, failed(1, 'lxc: failed')), 'transient', tool);
  });

  it('a tool not in the table is transient (retried until the deadline), unless it cannot be started', () => {
    assert.equal(classifyFailure('frobnicate', failed(1, 'oops')), 'transient');
    assert.equal(classifyFailure('frobnicate', failed(undefined, '', { notStarted: true })), 'terminal');
  });
});

describe('runCommand classifies its failures', () => {
  after(() => stopSpawnHelper());

  it('tar on a missing archive fails terminally, and the operation would say what tar said', async () => {
    const e = await runCommand('tar', [
      '--extract',
      '--file',
      '/nonexistent/svcd-test.tar',
      '--directory',
      '/tmp',
    ]).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(e instanceof HostCommandError);
    assert.equal(e.exitCode, 2);
    assert.equal(e.terminal, true);
    assert.equal(isTerminalError(e), true);
    assert.equal(
      terminalMessageOf(e),
      'tar: /nonexistent/svcd-test.tar: Cannot open: No such file or directory\ntar: Error is not recoverable: exiting now',
    );
  });

  it('a transient failure stays transient; a missing tool is terminal', async () => {
    const busy = await runCommand('sh', ['-c', 'echo "x: Device or resource busy" >&2; exit 1']).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(busy instanceof HostCommandError);
    assert.equal(isTerminalError(busy), false);
    const missing = await runCommand('svcd-no-such-tool', []).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(missing instanceof HostCommandError);
    assert.equal(isTerminalError(missing), true, missing.message);
  });
});

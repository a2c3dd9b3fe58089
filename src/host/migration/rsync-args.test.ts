import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  rsyncFeatureArgs,
  rsyncHasXxh128,
  rsyncReceiveArgs,
  rsyncSendArgs,
  rsyncSkipsSelinuxXattrs,
  socketRsh,
} from './rsync-args.ts';

const rsh = socketRsh('/run/svcd/mig/1.sock');

test('the sending side runs the client LXD runs, all features agreed', () => {
  assert.deepEqual(
    rsyncSendArgs({
      sourcePath: '/var/lib/svcd/pool/c1/rootfs',
      features: ['xattrs', 'delete', 'compress'],
      skipSelinuxXattrs: true,
      rsh,
    }),
    [
      '-ar',
      '--devices',
      '--numeric-ids',
      '--partial',
      '--sparse',
      '--xattrs',
      '--filter=-x security.selinux',
      '--delete',
      '--compress',
      '--compress-level=2',
      '/var/lib/svcd/pool/c1/rootfs/',
      'localhost:/tmp/foo',
      '-e',
      'sh -c "exec socat -t 0.01 -b 262144 - UNIX-CONNECT:/run/svcd/mig/1.sock"',
    ],
  );
});

test('bwlimit comes before the features; no features, no flags; a trailing slash is kept single', () => {
  assert.deepEqual(rsyncSendArgs({ sourcePath: '/src/', features: [], skipSelinuxXattrs: true, bwlimit: '10M', rsh }), [
    '-ar',
    '--devices',
    '--numeric-ids',
    '--partial',
    '--sparse',
    '--bwlimit',
    '10M',
    '/src/',
    'localhost:/tmp/foo',
    '-e',
    rsh,
  ]);
});

test('the receiving side runs the server LXD runs, features in the same order', () => {
  assert.deepEqual(
    rsyncReceiveArgs({ targetPath: '/dst', features: ['compress', 'xattrs'], skipSelinuxXattrs: false }),
    [
      '--server',
      '-vlogDtpre.iLsfx',
      '--numeric-ids',
      '--devices',
      '--partial',
      '--sparse',
      '--xattrs',
      '--compress',
      '--compress-level=2',
      '.',
      '/dst',
    ],
  );
});

test('feature flags are identical whichever side builds them', () => {
  assert.deepEqual(rsyncFeatureArgs(['delete'], { skipSelinuxXattrs: true }), ['--delete']);
  assert.deepEqual(rsyncFeatureArgs(['delete', 'xxh128'], { skipSelinuxXattrs: true }), [
    '--delete',
    '--checksum-choice=xxh128',
  ]);
});

test('xxh128 is had when rsync --version lists it among its checksums', () => {
  const v = (list: string) =>
    `rsync  version 3.2.7  protocol version 31\nChecksum list:\n    ${list}\nCompress list:\n    zstd\n`;
  assert.equal(rsyncHasXxh128(v('xxh128 xxh3 xxh64 (xxhash) md5 md4 none')), true);
  assert.equal(rsyncHasXxh128(v('md5 md4 none')), false);
  assert.equal(rsyncHasXxh128('rsync  version 3.1.3  protocol version 31\n'), false);
  assert.equal(rsyncHasXxh128(''), false);
});

test('the selinux filter needs rsync 3.1.3 or later', () => {
  assert.equal(rsyncSkipsSelinuxXattrs('rsync  version 3.2.7  protocol version 31\n'), true);
  assert.equal(rsyncSkipsSelinuxXattrs('rsync  version 3.1.3  protocol version 31'), true);
  assert.equal(rsyncSkipsSelinuxXattrs('rsync  version 3.1.2  protocol version 31'), false);
  assert.equal(rsyncSkipsSelinuxXattrs('garbage'), false);
});

test('the -e command refuses a socket path that could break out of its quotes', () => {
  assert.throws(() => socketRsh('x" ; rm -rf / "'), TypeError);
  assert.throws(() => socketRsh(''), TypeError);
  assert.throws(() => socketRsh('/run/../etc/x'), TypeError);
  assert.throws(() => socketRsh('relative.sock'), TypeError);
});

test('a basis tree goes to the receiver as --link-dest or --copy-dest, before the paths', () => {
  const args = (mode: 'link' | 'copy') =>
    rsyncReceiveArgs({ targetPath: '/dst', features: [], skipSelinuxXattrs: false, basis: { dir: '/s1', mode } });
  assert.deepEqual(args('link').slice(-3), ['--link-dest=/s1', '.', '/dst']);
  assert.deepEqual(args('copy').slice(-3), ['--copy-dest=/s1', '.', '/dst']);
});

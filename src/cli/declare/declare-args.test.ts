import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCliArgs } from '../cli-args.ts';
import { parseDeclareArgs } from './declare-args.ts';

test('the declarative verbs take their own options, passed on unparsed', () => {
  assert.deepEqual(parseCliArgs(['apply', '-f', '-', '--prune']), {
    verb: 'apply',
    help: false,
    rest: ['-f', '-', '--prune'],
  });
  assert.deepEqual(parseCliArgs(['init']), { verb: 'init', help: false, rest: [] });
  const a = parseDeclareArgs('apply', ['-f', 'doc.yaml', '--dry-run', '--prune', '--parallel=4']);
  assert.equal(a.file, 'doc.yaml');
  assert.equal(a.dryRun && a.prune, true);
  assert.equal(a.parallel, 4);
  const i = parseDeclareArgs('init', [
    '--auto',
    '--storage-backend',
    'btrfs',
    '--network-address',
    '::',
    '--network-port',
    '9443',
  ]);
  assert.deepEqual([i.auto, i.storageBackend, i.networkAddress, i.networkPort], [true, 'btrfs', '::', 9443]);
  const r = parseDeclareArgs('diff', ['-f', 'x', '--url', 'https://h:8443', '--client-cert', 'c', '--client-key', 'k']);
  assert.deepEqual([r.url, r.clientCert, r.clientKey], ['https://h:8443', 'c', 'k']);
});

test('usage errors', () => {
  const bad = (verb: 'init' | 'apply' | 'diff', argv: string[], re: RegExp) =>
    assert.throws(() => parseDeclareArgs(verb, argv), re);
  bad('apply', [], /needs -f FILE/);
  bad('apply', ['-f'], /-f needs a value/);
  bad('apply', ['-f', 'x', '--auto'], /svcd apply takes no --auto/);
  bad('diff', ['-f', 'x', '--prune'], /svcd diff takes no --prune/);
  bad('apply', ['-f', 'x', 'extra'], /unexpected argument 'extra'/);
  bad('apply', ['-f', 'x', '--parallel', '0'], /--parallel needs a number from 1/);
  bad('init', [], /exactly one of --auto, --preseed, --dump/);
  bad('init', ['--auto', '--dump'], /exactly one of/);
  bad('init', ['--preseed', '--storage-backend', 'dir'], /--storage-backend goes with --auto/);
  bad('init', ['--auto', '--storage-backend', 'zfs'], /must be dir or btrfs, got 'zfs'/);
  bad('init', ['--auto', '--network-port', '1'], /--network-port goes with --network-address/);
  bad('apply', ['-f', 'x', '--url', 'https://h'], /--url needs --client-cert and --client-key/);
  bad('apply', ['-f', 'x', '--client-cert', 'c'], /go with --url/);
  bad('apply', ['-f', 'x', '--dry-run=yes'], /--dry-run takes no value/);
});

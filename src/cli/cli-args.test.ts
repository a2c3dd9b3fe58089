import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCliArgs } from './cli-args.ts';

test('no verb is the daemon; --timeout in both spellings; --help anywhere', () => {
  assert.deepEqual(parseCliArgs([]), { verb: 'daemon', help: false });
  assert.deepEqual(parseCliArgs(['waitready', '--timeout', '30']), { verb: 'waitready', help: false, timeoutSec: 30 });
  assert.deepEqual(parseCliArgs(['shutdown', '--timeout=1.5']), { verb: 'shutdown', help: false, timeoutSec: 1.5 });
  assert.deepEqual(parseCliArgs(['--help']), { verb: 'daemon', help: true });
  assert.deepEqual(parseCliArgs(['version', '-h']), { verb: 'version', help: true });
  assert.deepEqual(parseCliArgs(['ui', '--revoke-all']), { verb: 'ui', help: false, flags: ['--revoke-all'] });
});

test('bad flags and values are usage errors', () => {
  assert.throws(() => parseCliArgs(['waitready', '--timeout']), /needs a number of seconds, got nothing/);
  assert.throws(() => parseCliArgs(['waitready', '--timeout', 'soon']), /got 'soon'/);
  assert.throws(() => parseCliArgs(['waitready', '--timeout=-1']), /got '-1'/);
  assert.throws(() => parseCliArgs(['--force']), /unknown option --force/);
  assert.throws(() => parseCliArgs(['shutdown', 'now']), /unexpected argument 'now'/);
});

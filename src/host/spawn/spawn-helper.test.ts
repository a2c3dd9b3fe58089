import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostCommandError, runCommand } from '../exec.ts';
import { stopSpawnHelper } from './spawn-helper.ts';

test('runCommand through the spawn helper: stdout, stdin bytes, exit status and stderr of a failure', async () => {
  assert.equal(await runCommand('sh', ['-c', 'echo "$0 $1"', 'a', 'b c']), 'a b c', 'argv is passed as is, no shell string');
  assert.equal(await runCommand('cat', [], { input: Buffer.from([0, 1, 2, 255]) }).then((s) => Buffer.from(s, 'latin1').length), 4);
  const err = await runCommand('sh', ['-c', 'echo bad >&2; exit 3']).catch((e: unknown) => e);
  assert.ok(err instanceof HostCommandError);
  assert.equal(err.exitCode, 3);
  assert.equal(err.stderr, 'bad');
  assert.deepEqual(err.command, ['sh', '-c', 'echo bad >&2; exit 3']);
});

test('runCommand: environment, timeout and cancellation reach the command', async () => {
  assert.equal(await runCommand('sh', ['-c', 'echo $SVCD_T'], { env: { SVCD_T: 'x1' } }), 'x1');
  await assert.rejects(runCommand('sleep', ['5'], { timeoutMs: 100 }), /timed out/);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  const t0 = Date.now();
  await assert.rejects(runCommand('sleep', ['5'], { signal: ac.signal }), /cancelled/);
  assert.ok(Date.now() - t0 < 4000, 'the command was killed, not waited for');
  await assert.rejects(runCommand('/nonexistent/command', []), HostCommandError);
});

test('a helper that dies fails the commands in flight, and the next command starts a new one', async () => {
  const inFlight = runCommand('sleep', ['5']);
  await new Promise((r) => setTimeout(r, 100));
  stopSpawnHelper();
  await assert.rejects(inFlight, /spawn helper process exited|was cancelled|exited with|signal/);
  assert.equal(await runCommand('echo', ['again']), 'again');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostCommandError, streamCommand } from './exec.ts';

// A child that prints a line, then another 200 ms later and exits (with the code given as its argument).
const CHILD = `
console.log('first');
setTimeout(() => { console.log('second'); process.exit(Number(process.argv[1] ?? 0)); }, 200);
`;

test('delivers lines while the command runs and resolves on a clean exit', async () => {
  const seen: Array<[string, number]> = [];
  const t0 = Date.now();
  await streamCommand(process.execPath, ['-e', CHILD, '0'], { onLine: (l) => seen.push([l, Date.now() - t0]) });
  assert.deepEqual(seen.map(([l]) => l), ['first', 'second']);
  assert.ok(seen[1]![1] - seen[0]![1] >= 150, `lines arrived ${seen[0]![1]} and ${seen[1]![1]} ms in`);
});

test('a failing command rejects with HostCommandError (exit code, stderr)', async () => {
  await assert.rejects(
    streamCommand(process.execPath, ['-e', 'console.error("boom"); process.exit(3)'], { onLine: () => {} }),
    (e: unknown) => e instanceof HostCommandError && e.exitCode === 3 && e.stderr === 'boom',
  );
});

test('aborting stops the command and resolves', async () => {
  const ac = new AbortController();
  const lines: string[] = [];
  const done = streamCommand(process.execPath, ['-e', 'console.log("up"); setInterval(() => {}, 1000)'], {
    signal: ac.signal,
    onLine: (l) => {
      lines.push(l);
      ac.abort();
    },
  });
  await done;
  assert.deepEqual(lines, ['up']);
});

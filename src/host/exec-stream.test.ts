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
  assert.deepEqual(
    seen.map(([l]) => l),
    ['first', 'second'],
  );
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

test('the command dies with the process that started it, even when that one is killed', async () => {
  const { spawn } = await import('node:child_process');
  const { readFile } = await import('node:fs/promises');
  const { fileURLToPath } = await import('node:url');
  const execTs = fileURLToPath(new URL('./exec.ts', import.meta.url));
  // A Node process (standing for svcd) that runs `sleep 1000` through streamCommand.
  const parent = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import(${JSON.stringify(execTs)}).then((m) => m.streamCommand('sleep', ['1000'], { onLine: () => {} }))`,
    ],
    { stdio: 'ignore' },
  );
  try {
    let sleeper: number | undefined;
    // Its descendants (the spawn helper runs it), breadth first.
    const childrenOf = async (pid: string) =>
      (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(/\s+/).filter(Boolean);
    for (let i = 0; i < 100 && sleeper === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const queue = [String(parent.pid)];
      while (queue.length && sleeper === undefined) {
        for (const c of await childrenOf(queue.shift()!)) {
          if ((await readFile(`/proc/${c}/cmdline`, 'utf8').catch(() => '')) === 'sleep\u00001000\u0000')
            sleeper = Number(c);
          queue.push(c);
        }
      }
    }
    assert.ok(sleeper, 'sleep 1000 started under the parent');
    parent.kill('SIGKILL');
    let gone = false;
    for (let i = 0; i < 50 && !gone; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const stat = await readFile(`/proc/${sleeper}/stat`, 'utf8').catch(() => '');
      gone = stat === '' || / Z /.test(stat);
    }
    assert.ok(gone, 'sleep ended with its parent');
  } finally {
    parent.kill('SIGKILL');
  }
});

test('a line handler that throws rejects with its error, and the command is not left running', async () => {
  const { readFile } = await import('node:fs/promises');
  let pid: number | undefined;
  await assert.rejects(
    streamCommand(process.execPath, ['-e', 'console.log(process.pid); setInterval(() => {}, 1000)'], {
      onLine: (l) => {
        pid = Number(l);
        throw new Error('handler broke');
      },
    }),
    /handler broke/,
  );
  assert.ok(pid && pid > 0);
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    gone = stat === '' || / Z /.test(stat);
    if (!gone) await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(gone, `the command (pid ${pid}) was killed`);
});

test('aborted while the command is being started: it is stopped all the same', async () => {
  const ac = new AbortController();
  const done = streamCommand(process.execPath, ['-e', 'console.log("up"); setInterval(() => {}, 1000)'], {
    signal: ac.signal,
    onLine: () => {},
  });
  // Before the helper answered with the started process.
  queueMicrotask(() => ac.abort());
  const t0 = Date.now();
  await done;
  assert.ok(Date.now() - t0 < 4_000, 'ended by SIGTERM, not left running');
});

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseInitExit, stopCauseOf } from './init-exit.ts';
import { readInitExit } from './read-init-exit.ts';

// Lines as LXC 5.0.2 writes them (abridged from real logs on a Debian 12 host).
const ID = 'baab83df-bf6f-4c21-84ab-75b7ab2dc088';
const L = (t: string, level: string, msg: string) => `lxc-start ${ID} 20261121165947.${t} ${level.padEnd(8)} ${msg}`;
const run = (pid: number, end?: string) =>
  [
    L('100', 'INFO', `start - ../src/lxc/start.c:lxc_init:881 - Container "${ID}" is initialized`),
    L('101', 'INFO', 'start - ../src/lxc/start.c:lxc_spawn:1762 - Cloned CLONE_NEWPID'),
    L('116', 'NOTICE', `start - ../src/lxc/start.c:post_start:2205 - Started "/sbin/init" with pid "${pid}"`),
    L(
      '117',
      'NOTICE',
      `start - ../src/lxc/start.c:signal_handler:446 - Received 17 from pid ${pid + 1} instead of container init ${pid}`,
    ),
    ...(end ? [L('416', 'INFO', `error - ../src/lxc/error.c:lxc_error_set_and_log:34 - Child <${pid}> ${end}`)] : []),
    L(
      '454',
      'INFO',
      `conf - ../src/lxc/conf.c:run_script_argv:338 - Executing script "/usr/share/lxcfs/lxc.reboot.hook" for container "${ID}", config section "lxc"`,
    ),
  ].join('\n');

test('signals and exit statuses of init', () => {
  assert.deepEqual(parseInitExit(run(2718, 'ended on signal Interrupt(2)')), {
    kind: 'signal',
    signal: 2,
    name: 'Interrupt',
  });
  assert.deepEqual(parseInitExit(run(2718, 'ended on signal Killed(9)')), {
    kind: 'signal',
    signal: 9,
    name: 'Killed',
  });
  assert.deepEqual(parseInitExit(run(2718, 'ended on signal Hangup(1)')), {
    kind: 'signal',
    signal: 1,
    name: 'Hangup',
  });
  assert.deepEqual(parseInitExit(run(5971, 'ended on error (3)')), { kind: 'exit', code: 3 });
  // exit status 0 logs nothing, but the run logged at INFO
  assert.deepEqual(parseInitExit(run(5796)), { kind: 'exit', code: 0 });
});

test('the run of the given pid, not a later one', () => {
  const text = `${run(100, 'ended on signal Hangup(1)')}\n${run(200)}`;
  assert.deepEqual(parseInitExit(text, 100), { kind: 'signal', signal: 1, name: 'Hangup' });
  assert.deepEqual(parseInitExit(text), { kind: 'exit', code: 0 });
  // a line for another pid after the start does not count
  assert.deepEqual(
    parseInitExit(`${run(300)}\n${L('9', 'INFO', 'error - x - Child <301> ended on signal Killed(9)')}`, 300),
    { kind: 'exit', code: 0 },
  );
});

test('unknown: no start line, or a log level that hides INFO', () => {
  assert.deepEqual(parseInitExit(''), { kind: 'unknown' });
  assert.deepEqual(parseInitExit(run(1, 'ended on signal Killed(9)'), 2), { kind: 'unknown' });
  const noticeOnly = run(7)
    .split('\n')
    .filter((l) => !/ INFO /.test(l))
    .join('\n');
  assert.deepEqual(parseInitExit(noticeOnly), { kind: 'unknown' });
});

test('causes', () => {
  assert.equal(stopCauseOf({ kind: 'signal', signal: 2, name: 'Interrupt' }), 'poweroff');
  assert.equal(stopCauseOf({ kind: 'exit', code: 0 }), 'poweroff');
  assert.equal(stopCauseOf({ kind: 'signal', signal: 1, name: 'Hangup' }), 'reboot');
  assert.equal(stopCauseOf({ kind: 'signal', signal: 9, name: 'Killed' }), 'killed');
  assert.equal(stopCauseOf({ kind: 'signal', signal: 11, name: 'Segmentation fault' }), 'crashed');
  assert.equal(stopCauseOf({ kind: 'exit', code: 1 }), 'crashed');
  assert.equal(stopCauseOf({ kind: 'unknown' }), 'unknown');
});

test('readInitExit reads the tail of the file; a missing file is unknown', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-init-exit-'));
  try {
    const file = path.join(dir, 'lxc.log');
    await writeFile(file, `${'x'.repeat(2000)}\n${run(42, 'ended on signal Killed(9)')}\n`);
    assert.deepEqual(await readInitExit(file, 42, 1500), { kind: 'signal', signal: 9, name: 'Killed' });
    assert.deepEqual(await readInitExit(path.join(dir, 'nope'), 42), { kind: 'unknown' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

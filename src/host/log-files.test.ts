import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { isLogFileName, listLogFiles, openLogFile, removeLogFile } from './log-files.ts';

let root = '';
let outside = '';
before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'svcd-logs-'));
  outside = await mkdtemp(path.join(os.tmpdir(), 'svcd-logs-outside-'));
  await writeFile(path.join(outside, 'secret'), 'top secret\n');
  const dir = path.join(root, 'default_c1');
  await mkdir(dir);
  await writeFile(path.join(dir, 'lxc.log'), 'lxc says hi\n');
  await writeFile(path.join(dir, 'console.log'), 'console\n');
  await writeFile(path.join(dir, '.hidden'), 'no\n');
  await mkdir(path.join(dir, 'subdir'));
  await symlink(path.join(outside, 'secret'), path.join(dir, 'leak.log'));
  await promisify(execFile)('mkfifo', [path.join(dir, 'fifo.log')]);
  // a log directory that is itself a symlink to somewhere else
  await symlink(outside, path.join(root, 'default_evil'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

test('names are one plain component', () => {
  for (const ok of ['lxc.log', 'console.log', 'exec_1b2c.stdout', 'a']) assert.ok(isLogFileName(ok), ok);
  for (const bad of ['', '.', '..', '../x', 'a/b', '.hidden', 'a\0b', 'a b', '-x']) assert.ok(!isLogFileName(bad), bad);
});

test('lists plain files only; a missing or symlinked directory lists nothing and is not created', async () => {
  assert.deepEqual(await listLogFiles(root, 'default_c1'), ['console.log', 'lxc.log']);
  assert.deepEqual(await listLogFiles(root, 'default_nope'), []);
  assert.deepEqual(await listLogFiles(root, 'default_evil'), []);
  assert.deepEqual(await listLogFiles(path.join(root, 'missing-root'), 'default_c1'), []);
  assert.deepEqual(await listLogFiles(root, '..'), []);
});

test('opens plain files; never a symlink, FIFO, directory or anything outside', async () => {
  const got = await openLogFile(root, 'default_c1', 'lxc.log');
  assert.ok(got);
  assert.equal(got.size, 12);
  assert.equal((await got.fh.readFile()).toString(), 'lxc says hi\n');
  await got.fh.close();
  for (const name of ['leak.log', 'fifo.log', 'subdir', '.hidden', '..', '../default_c1/lxc.log', 'nope.log'])
    assert.equal(await openLogFile(root, 'default_c1', name), undefined, name);
  assert.equal(await openLogFile(root, 'default_evil', 'secret'), undefined);
});

test('removes plain files only', async () => {
  assert.equal(await removeLogFile(root, 'default_c1', 'console.log'), true);
  assert.equal(await removeLogFile(root, 'default_c1', 'console.log'), false);
  assert.equal(await removeLogFile(root, 'default_c1', 'leak.log'), false);
  assert.equal(await removeLogFile(root, 'default_evil', 'secret'), false);
  assert.equal(await readFile(path.join(outside, 'secret'), 'utf8'), 'top secret\n');
  assert.deepEqual(await listLogFiles(root, 'default_c1'), ['lxc.log']);
});

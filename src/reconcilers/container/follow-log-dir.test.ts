import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createTrash } from '../../host/storage/trash.ts';
import { createContainerFilesAdapter } from '../../host/lxc/container-files-adapter.ts';
import { followLogDir, type LogDirFacts } from './follow-log-dir.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
const stateDir = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), 'svcd-logdir-'));
  dirs.push(d);
  await mkdir(path.join(d, 'logs'));
  return d;
};
const files = createContainerFilesAdapter();
const logs = (d: string, name: string) => path.join(d, 'logs', name);

test('a new container records its log directory; the same name again changes nothing', async () => {
  const d = await stateDir();
  const facts: LogDirFacts = {};
  assert.equal(await followLogDir(d, { project: 'default', name: 'a' }, facts, createTrash(), files), true);
  assert.deepEqual(facts, { logDir: 'default_a' });
  assert.equal(await followLogDir(d, { project: 'default', name: 'a' }, facts, createTrash(), files), false);
});

test('a rename moves the log directory with its files; a crash after the move redoes nothing', async () => {
  const d = await stateDir();
  await mkdir(logs(d, 'p_a'));
  await writeFile(path.join(logs(d, 'p_a'), 'lxc.log'), 'started\n');
  const facts: LogDirFacts = { logDir: 'p_a' };
  assert.equal(await followLogDir(d, { project: 'p', name: 'b' }, facts, createTrash(), files), true);
  assert.equal(await readFile(path.join(logs(d, 'p_b'), 'lxc.log'), 'utf8'), 'started\n');
  assert.equal(existsSync(logs(d, 'p_a')), false);
  assert.deepEqual(facts, { logDir: 'p_b' });
  // The facts write was lost: the old directory is gone, the new one stays as it is.
  assert.equal(await followLogDir(d, { project: 'p', name: 'b' }, { logDir: 'p_a' }, createTrash(), files), true);
  assert.equal(await readFile(path.join(logs(d, 'p_b'), 'lxc.log'), 'utf8'), 'started\n');
});

test("what a deleted container of the new name left goes to the trash; the renamed one's logs take its place", async () => {
  const d = await stateDir();
  await mkdir(logs(d, 'default_old'));
  await writeFile(path.join(logs(d, 'default_old'), 'lxc.log'), 'mine\n');
  await mkdir(logs(d, 'default_new'));
  await writeFile(path.join(logs(d, 'default_new'), 'lxc.log'), 'a deleted one\n');
  const trash = createTrash();
  await followLogDir(d, { project: 'default', name: 'new' }, { logDir: 'default_old' }, trash, files);
  assert.equal(await readFile(path.join(logs(d, 'default_new'), 'lxc.log'), 'utf8'), 'mine\n');
  await trash.sweep(path.join(d, 'trash'));
  assert.deepEqual(await readdir(path.join(d, 'trash')), []);
});

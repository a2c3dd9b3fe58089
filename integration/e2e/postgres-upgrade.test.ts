/**
 * A package upgrade of PostgreSQL under svcd's private server: the server svcd left running (a stop of
 * svcd keeps it, the next svcd adopts it) runs a binary dpkg has replaced. The next svcd restarts it on
 * the installed binary, with every row kept. Data of another major version is refused, untouched.
 * The daemon uses a copy of the server's bin dir (SVCD_POSTGRES_BIN), so that the test can replace the
 * `postgres` binary as dpkg does: a new file renamed over the old one (a new inode; the old one deleted).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  stat,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import {
  parsePostmasterPid,
  POSTGRES_ROOT,
  privatePostgresDirOf,
} from '../../src/host/postgres/private-postgres-args.ts';
import { teardownContainers, uploadBusybox, waitOp as waitOpOf } from '../support/container-env.ts';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, type Client } from '../support/http.ts';
import { ensureRootSubids, lxcSkipReason } from '../support/lxc-host.ts';

const run = promisify(execFile);
const installed = (await readdir(POSTGRES_ROOT).catch(() => [] as string[]))
  .filter((n) => /^\d+$/.test(n))
  .sort((a, b) => Number(b) - Number(a))[0];
const skip =
  (await lxcSkipReason()) || (installed ? undefined : 'no PostgreSQL server binaries (apt-get install postgresql-15)');

/** Every file under `dir` with its size, mtime and content hash-free identity: what "untouched" is measured by. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const p = path.join(e.parentPath, e.name);
    const s = await stat(p);
    out.push(`${path.relative(dir, p)} ${s.size} ${s.mtimeMs} ${s.ino}`);
  }
  return out.sort();
}

/** Gone, or a zombie its new parent has not reaped yet (the postmaster is detached from whoever started it). */
async function gone(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat === '' || stat[stat.lastIndexOf(')') + 2] === 'Z';
}

describe('a PostgreSQL upgrade under the private server', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir = '';
  let binRoot = '';
  let bin = '';
  const waitOp = (res: { status: number; json: any; text: string }) => waitOpOf(api, res);
  const postmaster = async () =>
    parsePostmasterPid(
      await readFile(path.join(privatePostgresDirOf(d.stateDir), 'postmaster.pid'), 'utf8').catch(() => ''),
    )?.pid;
  /** The ended operations (GET /1.0/operations lists active ones only), as GET answers each. */
  const done: string[] = [];
  const opOf = async (id: string) => {
    const o = (await api.get(`/1.0/operations/${id}`)).json.metadata as {
      id: string;
      status: string;
      description: string;
      err: string;
      updated_at: string;
    };
    return `${o.id} ${o.status} ${o.description} ${o.err} ${o.updated_at}`;
  };
  const view = async () => ({
    list: (await api.get('/1.0/containers')).json.metadata,
    one: (await api.get('/1.0/containers/pgup-c1')).json.metadata,
    snapshots: (await api.get('/1.0/containers/pgup-c1/snapshots')).json.metadata,
    active: (await api.get('/1.0/operations')).json.metadata,
    ended: await Promise.all(done.map(opOf)),
  });

  before(async () => {
    await ensureRootSubids();
    // Not named "bin": PostgreSQL finds its libraries relative to its own path only when it sits in a dir
    // named as its configured bindir; elsewhere it uses the installed ones (/usr/lib/postgresql/N/lib).
    binRoot = await mkdtemp(path.join(os.tmpdir(), 'svcd-pgup-'));
    await chmod(binRoot, 0o755);
    bin = path.join(binRoot, 'pgbin');
    await mkdir(bin, { mode: 0o755 });
    for (const f of ['postgres', 'pg_ctl', 'initdb'])
      await copyFile(path.join(POSTGRES_ROOT, installed!, 'bin', f), path.join(bin, f));
    for (const f of ['postgres', 'pg_ctl', 'initdb']) await chmod(path.join(bin, f), 0o755);
    imgDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-img-'));
    d = await startDaemon({ env: { SVCD_LOG_LEVEL: 'info', SVCD_POSTGRES_BIN: bin } });
    api = client({ socketPath: d.socketPath });
    await uploadBusybox(api, imgDir);
  });
  after(async () => {
    if (d?.proc.exitCode !== null || d?.proc.signalCode !== null) await d?.restart().catch(() => {});
    await teardownContainers(d, api, [imgDir, binRoot]);
  });

  test('the next svcd restarts the server that runs the replaced binary on the new one, and every row is kept', async () => {
    done.push(
      (await waitOp(await api.post('/1.0/containers', { name: 'pgup-c1', source: { type: 'image', alias: 'bb' } }))).id,
    );
    assert.equal((await api.patch('/1.0/containers/pgup-c1', { config: { 'user.note': 'kept' } })).status, 200);
    done.push((await waitOp(await api.post('/1.0/containers/pgup-c1/snapshots', { name: 'snap0' }))).id);
    const before = await view();
    assert.ok(before.list.includes('/1.0/containers/pgup-c1'), JSON.stringify(before));
    assert.deepEqual(
      before.ended.map((o) => o.split(' ')[1]),
      ['Success', 'Success'],
      before.ended.join('\n'),
    );
    const oldPid = (await postmaster())!;
    assert.equal(await readlink(`/proc/${oldPid}/exe`), path.join(bin, 'postgres'));

    assert.equal(await d.stop(), 0);
    process.kill(oldPid, 0); // the server outlives svcd's stop
    // What dpkg does: the new file is written beside the old one and renamed over it.
    await copyFile(path.join(POSTGRES_ROOT, installed!, 'bin', 'postgres'), path.join(bin, 'postgres.dpkg-new'));
    await chmod(path.join(bin, 'postgres.dpkg-new'), 0o755);
    await rename(path.join(bin, 'postgres.dpkg-new'), path.join(bin, 'postgres'));
    assert.equal(await readlink(`/proc/${oldPid}/exe`), `${path.join(bin, 'postgres')} (deleted)`);

    await d.restart();
    const newPid = (await postmaster())!;
    assert.notEqual(newPid, oldPid, 'a new postmaster');
    assert.ok(await gone(oldPid), 'the old postmaster is gone');
    assert.equal(await readlink(`/proc/${newPid}/exe`), path.join(bin, 'postgres'));
    assert.equal(
      (await stat(`/proc/${newPid}/exe`)).ino,
      (await stat(path.join(bin, 'postgres'))).ino,
      'it runs the new file',
    );
    assert.match(d.output(), /restarting the embedded PostgreSQL server on the installed binary/);
    assert.deepEqual(await view(), before);
    assert.equal((await api.get('/1.0/containers/pgup-c1')).json.metadata.config['user.note'], 'kept');
  });

  test('data of another major version: svcd refuses to start, says what to do, and touches nothing', async () => {
    assert.equal(await d.stop(), 0);
    const dataDir = privatePostgresDirOf(d.stateDir);
    const pm = (await postmaster())!;
    const { uid, gid } = await stat(dataDir);
    await run(path.join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'fast', '-w', '-s'], { uid, gid });
    assert.ok(await gone(pm), 'the server stopped');
    const major = (await readFile(path.join(dataDir, 'PG_VERSION'), 'utf8')).trim();
    const other = String(Number(major) - 1);
    await writeFile(path.join(dataDir, 'PG_VERSION'), `${other}\n`);
    const untouched = await snapshot(dataDir);

    await assert.rejects(d.restart(), /svcd exited with 3 at start/);
    assert.equal(d.proc.exitCode, 3, 'the exit code svcd.service does not restart (RestartPreventExitStatus)');
    assert.match(
      d.output(),
      new RegExp(
        `svcd: the embedded database in ${dataDir} was made by PostgreSQL ${other}, but SVCD_POSTGRES_BIN \\(${bin}\\) holds PostgreSQL ${major}`,
      ),
    );
    assert.match(
      d.output(),
      new RegExp(
        `svcd has not touched the data\\. Install PostgreSQL ${other}'s server again: apt-get install postgresql-${other}`,
      ),
    );
    assert.deepEqual(await snapshot(dataDir), untouched);
    assert.equal(await postmaster(), undefined, 'no server was started');

    // Put back, it is the same cluster with the same rows.
    await writeFile(path.join(dataDir, 'PG_VERSION'), `${major}\n`);
    await d.restart();
    assert.equal((await api.get('/1.0/containers/pgup-c1')).json.metadata.config['user.note'], 'kept');
  });
});

/** svcd's private PostgreSQL server: created, adopted by the next svcd, restarted after kill -9, reachable only by its unix socket. */
import assert from 'node:assert/strict';
import {
  access,
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import postgres from 'postgres';
import { parsePostgresUrl } from '../../src/db/postgres-url.ts';
import { runCommand } from '../../src/host/exec.ts';
import { createPrivatePostgres, type PrivatePostgres } from '../../src/host/postgres/private-postgres.ts';
import { POSTGRES_ROOT } from '../../src/host/postgres/private-postgres-args.ts';
import { eventually } from '../support/http.ts';

const hasBinaries = (
  await Promise.all(
    (
      await readdir(POSTGRES_ROOT).catch(() => [])
    ).map((d) =>
      access(path.join(POSTGRES_ROOT, d, 'bin/pg_ctl')).then(
        () => true,
        () => false,
      ),
    ),
  )
).some(Boolean);
const skip =
  process.getuid?.() !== 0
    ? 'needs root'
    : !hasBinaries
      ? 'no PostgreSQL server binaries (apt-get install postgresql-15)'
      : undefined;
if (skip) console.log(`# skipping private PostgreSQL tests: ${skip}`);

const quiet = { info() {}, warn() {}, error() {} };
const make = (stateDir: string, checkIntervalMs = 100) =>
  createPrivatePostgres({ stateDir, run: runCommand, log: quiet, checkIntervalMs });

async function query(url: string, text: string): Promise<unknown[]> {
  const target = parsePostgresUrl(url);
  const sql = postgres(target.url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 5,
    ...(target.host ? { host: target.host } : {}),
  });
  try {
    return [...(await sql.unsafe(text))];
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/** Inodes of the sockets a process holds open. */
async function socketInodes(pid: number): Promise<Set<string>> {
  const out = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
    const m = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''));
    if (m) out.add(m[1]!);
  }
  return out;
}
/** Inodes of the sockets of a /proc/net table (tcp, tcp6, udp, udp6: column 10; unix: column 7). */
async function tableInodes(file: string, column: number): Promise<Map<string, string>> {
  const rows = (await readFile(file, 'utf8').catch(() => '')).trim().split('\n').slice(1);
  return new Map(rows.map((r) => r.trim().split(/\s+/)).map((f) => [f[column] ?? '', f.join(' ')]));
}

describe('private PostgreSQL server', { skip }, () => {
  let stateDir = '';
  const servers: PrivatePostgres[] = [];
  after(async () => {
    for (const s of servers) s.close();
    await servers[0]?.stop().catch(() => {});
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('is created, adopted by the next svcd, started again after kill -9, and listens on its unix socket only', async () => {
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pg-'));
    // As the agent leaves a state dir: the postgres user may traverse it.
    await chmod(stateDir, 0o711);
    const first = make(stateDir);
    servers.push(first);
    const made = await first.ensure();
    assert.equal(made.how, 'created');
    assert.deepEqual(await query(made.url, 'select 1 as one'), [{ one: 1 }]);
    assert.deepEqual(await query(made.url, 'show listen_addresses'), [{ listen_addresses: '' }]);

    // Only a unix socket: the postmaster holds no TCP or UDP socket, and its unix socket sits in a
    // 0700 directory owned by the postgres user.
    const held = await socketInodes(made.pid);
    for (const t of ['tcp', 'tcp6', 'udp', 'udp6']) {
      const rows = await tableInodes(`/proc/${made.pid}/net/${t}`, 9);
      for (const inode of held) assert.ok(!rows.has(inode), `the postmaster holds a ${t} socket: ${rows.get(inode)}`);
    }
    const unix = await tableInodes(`/proc/${made.pid}/net/unix`, 6);
    const listening = [...held].map((i) => unix.get(i)).filter((r) => r?.endsWith('.s.PGSQL.5432'));
    assert.equal(listening.length, 1, 'one unix socket named .s.PGSQL.5432');
    const dir = path.join(stateDir, 'postgres');
    assert.ok(listening[0]!.endsWith(`${dir}/.s.PGSQL.5432`), listening[0]);
    const st = await stat(dir);
    assert.equal(st.mode & 0o777, 0o700);
    assert.notEqual(st.uid, 0);

    // A restarted svcd (KillMode=process left the server running) adopts it.
    await query(made.url, 'create table kept (v int); insert into kept values (42)');
    // synchronous_commit is off: an acknowledged commit is durable once the WAL writer (every 20 ms) flushed it.
    const [{ lsn }] = (await query(made.url, 'select pg_current_wal_insert_lsn()::text as lsn')) as [{ lsn: string }];
    await eventually(
      async () =>
        ((await query(made.url, `select pg_current_wal_flush_lsn() >= '${lsn}'::pg_lsn as ok`)) as [{ ok: boolean }])[0]
          .ok,
      'the WAL flushed',
      5_000,
    );
    first.close();
    const second = make(stateDir);
    servers.push(second);
    const again = await second.ensure();
    assert.equal(again.how, 'adopted');
    assert.equal(again.pid, made.pid);

    // kill -9 of the postmaster: the supervisor starts it again, with the data.
    second.supervise();
    process.kill(made.pid, 'SIGKILL');
    await eventually(
      async () => {
        const pid = second.pid();
        assert.ok(pid !== undefined && pid !== made.pid, 'a new postmaster');
        assert.deepEqual(await query(again.url, 'select v from kept'), [{ v: 42 }]);
        return true;
      },
      'the postmaster started again with its data',
      30_000,
    );

    // Host shutdown stops it.
    const last = second.pid()!;
    await second.stop();
    await eventually(() => {
      assert.throws(() => process.kill(last, 0));
      return true;
    }, 'the postmaster stopped');
  });

  it('a stale postmaster.pid naming a live process that is not its postmaster (a pid reused after a reboot) does not stop a start', async () => {
    assert.ok(stateDir, 'the first case made the cluster');
    const s = make(stateDir);
    servers.push(s);
    await s.ensure();
    await s.stop();
    // As after a reboot: the pid in the lock file now belongs to some other process (this test's own).
    const pidFile = path.join(stateDir, 'postgres', 'postmaster.pid');
    await writeFile(
      pidFile,
      `${process.pid}\n${path.join(stateDir, 'postgres')}\n0\n5432\n${path.join(stateDir, 'postgres')}\n\n0 0\nready\n`,
    );
    await writeFile(
      path.join(stateDir, 'postgres', '.s.PGSQL.5432.lock'),
      `${process.pid}\n${path.join(stateDir, 'postgres')}\n0\n0\n`,
    );
    const again = await s.ensure();
    assert.notEqual(again.pid, process.pid);
    assert.equal(again.how, 'started');
    assert.deepEqual(await query(again.url, 'select v from kept'), [{ v: 42 }]);
    s.close();
  });

  it('a binary replaced while it runs (an upgrade under a running svcd): restarted on the new file once it settled, rows kept', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pg-'));
    await chmod(dir, 0o755);
    const installedDir = (await readdir(POSTGRES_ROOT))
      .filter((n) => /^\d+$/.test(n))
      .sort((a, b) => Number(b) - Number(a))[0]!;
    // Not named "bin": elsewhere than its configured bindir's name, PostgreSQL uses the installed libraries.
    const bin = path.join(dir, 'pgbin');
    await mkdir(bin, { mode: 0o755 });
    const put = async (f: string, as = f) => {
      await copyFile(path.join(POSTGRES_ROOT, installedDir, 'bin', f), path.join(bin, `${as}.new`));
      await chmod(path.join(bin, `${as}.new`), 0o755);
      await rename(path.join(bin, `${as}.new`), path.join(bin, as));
    };
    for (const f of ['postgres', 'pg_ctl', 'initdb']) await put(f);
    const state = path.join(dir, 'state');
    await mkdir(state, { mode: 0o711 });
    const s = createPrivatePostgres({
      stateDir: state,
      run: runCommand,
      log: quiet,
      checkIntervalMs: 100,
      binarySettleMs: 500,
      binDir: bin,
    });
    servers.push(s);
    try {
      const first = await s.ensure();
      await query(first.url, 'create table kept (v int); insert into kept values (7)');
      s.supervise();
      await put('postgres');
      await eventually(
        async () => {
          const pid = s.pid()!;
          assert.notEqual(pid, first.pid, 'a new postmaster');
          assert.equal(await readlink(`/proc/${pid}/exe`), path.join(bin, 'postgres'));
          assert.deepEqual(await query(first.url, 'select v from kept'), [{ v: 7 }]);
          return true;
        },
        'restarted on the new binary',
        30_000,
      );
    } finally {
      s.close();
      await s.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    }
  });
});

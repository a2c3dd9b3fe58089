import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  chooseInstalledServer,
  computeServerAdoption,
  debianServerDirs,
  isStaleServerError,
  majorMismatchMessage,
  parsePgVersionFile,
  parsePostgresVersion,
} from './compute-server-adoption.ts';

const d = '/var/lib/svcd/postgres';
const pg15 = { dir: '/usr/lib/postgresql/15/bin', major: 15 };
const pg16 = { dir: '/usr/lib/postgresql/16/bin', major: 16 };
const exe = { dev: 2049, ino: 1001 };
const base = { dataDir: d, dataMajor: 15, installed: pg15, installedExe: exe };

test('a postmaster running the installed binary is adopted; none running is started', () => {
  assert.deepEqual(
    computeServerAdoption({ ...base, running: { pid: 7, exe: '/usr/lib/postgresql/15/bin/postgres', identity: exe } }),
    { action: 'adopt' },
  );
  assert.deepEqual(computeServerAdoption(base), { action: 'start' });
  assert.deepEqual(computeServerAdoption({ ...base, dataMajor: undefined }), { action: 'start' }, 'no cluster yet');
  // /proc could not tell (no identity): adopted, the open-time probe is the fallback.
  assert.deepEqual(computeServerAdoption({ ...base, running: { pid: 7, exe: '' } }), { action: 'adopt' });
});

test('a postmaster whose binary was replaced (deleted, or another inode at the path) is restarted', () => {
  const deleted = computeServerAdoption({
    ...base,
    running: { pid: 7, exe: '/usr/lib/postgresql/15/bin/postgres (deleted)', identity: { dev: 2049, ino: 999 } },
  });
  assert.equal(deleted.action, 'restart');
  assert.match((deleted as { reason: string }).reason, /postmaster 7 runs .*\(deleted\): its binary was replaced/);
  const moved = computeServerAdoption({
    ...base,
    running: { pid: 7, exe: '/usr/lib/postgresql/15/bin/postgres', identity: { dev: 2049, ino: 999 } },
  });
  assert.equal(moved.action, 'restart');
  assert.equal(
    computeServerAdoption({ ...base, running: { pid: 7, exe: '/x/postgres', identity: { dev: 7, ino: 1001 } } }).action,
    'restart',
    'another device',
  );
});

test('data of another major version is refused, running or not, with what to do', () => {
  for (const running of [undefined, { pid: 7, exe: '/usr/lib/postgresql/15/bin/postgres', identity: exe }]) {
    const r = computeServerAdoption({ ...base, dataMajor: 14, running });
    assert.equal(r.action, 'refuse');
    assert.match((r as { message: string }).message, /made by PostgreSQL 14.*apt-get install postgresql-14/);
  }
});

test('the bin dir: the data major, the newest for a new cluster, refused when the data major is missing', () => {
  assert.deepEqual(chooseInstalledServer({ dataDir: d, dataMajor: 15, installed: [pg16, pg15] }), { server: pg15 });
  assert.deepEqual(chooseInstalledServer({ dataDir: d, dataMajor: undefined, installed: [pg15, pg16] }), {
    server: pg16,
  });
  const gone = chooseInstalledServer({ dataDir: d, dataMajor: 15, installed: [pg16] });
  assert.ok('refuse' in gone);
  assert.match(
    gone.refuse,
    /^the embedded database in \/var\/lib\/svcd\/postgres was made by PostgreSQL 15, but the installed server is PostgreSQL 16 \(\/usr\/lib\/postgresql\/16\/bin\)/,
  );
  assert.match(gone.refuse, /svcd has not touched the data/);
  const none = chooseInstalledServer({ dataDir: d, dataMajor: 15, installed: [] });
  assert.ok('refuse' in none);
  assert.match(
    none.refuse,
    /no PostgreSQL server binaries in \/usr\/lib\/postgresql\/\*\/bin: apt-get install postgresql-15/,
  );
  const conf = chooseInstalledServer({ dataDir: d, dataMajor: 15, installed: [], configured: '/opt/pg/bin' });
  assert.ok('refuse' in conf);
  assert.match(conf.refuse, /SVCD_POSTGRES_BIN \(\/opt\/pg\/bin\) holds no PostgreSQL server/);
});

test('the refusal gives the exact pg_upgrade commands to a newer major, and dump/restore to an older one', () => {
  const up = majorMismatchMessage({ dataDir: d, dataMajor: 15, installed: [pg16] });
  assert.ok(
    up.includes(
      'runuser -u postgres -- /usr/lib/postgresql/16/bin/pg_upgrade -b /usr/lib/postgresql/15/bin -B /usr/lib/postgresql/16/bin -d /var/lib/svcd/postgres -D /var/lib/svcd/postgres.16 -U svcd',
    ),
    up,
  );
  assert.ok(
    up.includes(
      'runuser -u postgres -- /usr/lib/postgresql/16/bin/initdb -D /var/lib/svcd/postgres.16 -U svcd --auth=trust -E UTF8 --locale=C',
    ),
    up,
  );
  assert.ok(
    up.includes(
      'mv /var/lib/svcd/postgres /var/lib/svcd/postgres.15; mv /var/lib/svcd/postgres.16 /var/lib/svcd/postgres',
    ),
    up,
  );
  const down = majorMismatchMessage({ dataDir: d, dataMajor: 16, installed: [pg15] });
  assert.match(down, /apt-get install postgresql-16/);
  assert.match(down, /cannot be moved to an older major version; pg_dump/);
  assert.doesNotMatch(down, /pg_upgrade/);
});

test('parsers: postgres --version, PG_VERSION, Debian dirs; the stale-server error', () => {
  assert.deepEqual(parsePostgresVersion('postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n'), {
    major: 15,
    version: '15.20',
  });
  assert.deepEqual(parsePostgresVersion('postgres (PostgreSQL) 17beta1'), { major: 17, version: '17' });
  assert.equal(parsePostgresVersion('bash: postgres: not found'), undefined);
  assert.equal(parsePgVersionFile('15\n'), 15);
  assert.equal(parsePgVersionFile(''), undefined);
  assert.equal(parsePgVersionFile('15.2\n'), undefined);
  assert.deepEqual(debianServerDirs('/usr/lib/postgresql', ['16', 'lib', '15']), [pg16, pg15]);
  assert.ok(
    isStaleServerError(
      new Error(
        'could not load library "/usr/lib/postgresql/15/lib/plpgsql.so": /usr/lib/postgresql/15/lib/plpgsql.so: undefined symbol: heap_datum_update_type',
      ),
    ),
  );
  assert.ok(!isStaleServerError(new Error('relation "x" does not exist')));
});

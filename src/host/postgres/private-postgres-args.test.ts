import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePostgresUrl } from '../../db/postgres-url.ts';
import {
  initdbArgs,
  parsePasswdUser,
  parsePostmasterPid,
  pgCtlStartArgs,
  privatePostgresUrl,
  renderPrivatePostgresConf,
} from './private-postgres-args.ts';

test('the conf listens on no address, only on a socket in the data dir, with small buffers', () => {
  const conf = renderPrivatePostgresConf("/var/lib/sv'cd/postgres");
  assert.match(conf, /^listen_addresses = ''$/m);
  assert.match(conf, /^unix_socket_directories = '\/var\/lib\/sv''cd\/postgres'$/m);
  assert.match(conf, /^unix_socket_permissions = 0700$/m);
  assert.match(conf, /^shared_buffers = '16MB'$/m);
  assert.match(conf, /^max_worker_processes = 0$/m);
  assert.match(conf, /^autovacuum = off$/m, 'svcd vacuums itself: no launcher process');
  assert.match(conf, /^synchronous_commit = off$/m);
  assert.match(conf, /^wal_writer_delay = '20ms'$/m);
  assert.doesNotMatch(conf, /fsync/);
  // one setting per line, no duplicates
  const keys = conf
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(' = ')[0]);
  assert.equal(new Set(keys).size, keys.length);
});

test('initdb and pg_ctl argv', () => {
  assert.deepEqual(initdbArgs('/s/postgres'), [
    '-D',
    '/s/postgres',
    '-U',
    'svcd',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  assert.deepEqual(pgCtlStartArgs('/s/postgres', '/s/postgres/server.log'), [
    'start',
    '-D',
    '/s/postgres',
    '-l',
    '/s/postgres/server.log',
    '-W',
    '-s',
  ]);
});

test('the URL names the socket directory, which open-database turns into a socket path', () => {
  const url = privatePostgresUrl('/var/lib/svcd/postgres');
  assert.ok(URL.canParse(url));
  assert.deepEqual(parsePostgresUrl(url), {
    url: 'postgres://svcd@localhost:5432/postgres',
    host: '/var/lib/svcd/postgres',
  });
});

test('postmaster.pid and /etc/passwd parsers', () => {
  assert.deepEqual(
    parsePostmasterPid('24640\n/s/postgres\n1795506996\n5432\n/s/postgres\n\n  5432001    123\nready   \n'),
    { pid: 24640, dataDir: '/s/postgres', socketDir: '/s/postgres', status: 'ready' },
  );
  assert.equal(parsePostmasterPid('24640\n/s/postgres\n1795506996\n5432\n/s/postgres\n')?.status, '');
  assert.equal(parsePostmasterPid(''), undefined);
  assert.equal(parsePostmasterPid('-1\n'), undefined);
  const passwd =
    'root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\nbad:x::1::/:/bin/false\n';
  assert.deepEqual(parsePasswdUser(passwd, 'postgres'), { uid: 101, gid: 104 });
  assert.equal(parsePasswdUser(passwd, 'bad'), undefined);
  assert.equal(parsePasswdUser(passwd, 'nobody'), undefined);
});

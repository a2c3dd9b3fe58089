/**
 * Pure builders for svcd's private PostgreSQL server (the embedded database by default): a cluster
 * made by Debian's postgresql-15 in `<stateDir>/postgres`, owned by the `postgres` system user,
 * listening on no TCP address at all, only on a unix socket inside its own 0700 data directory (so
 * only root and that user can reach it), with settings sized for a database of a few MiB.
 */
import path from 'node:path';

/** Where the cluster lives (data directory, unix socket, and the server's log: `server.log` in it). */
export const privatePostgresDirOf = (stateDir: string) => path.join(stateDir, 'postgres');

/** The superuser initdb creates; local connections are trusted (the socket is reachable by root only). */
export const PRIVATE_POSTGRES_USER = 'svcd';
const PORT = 5432;

/** Where Debian installs PostgreSQL's server packages: one `<major>/bin` each (compute-server-adoption.ts picks one). */
export const POSTGRES_ROOT = '/usr/lib/postgresql';

/**
 * postgresql.conf of the private server (written on every start; initdb's is replaced). Sized by
 * measurement (docs/database.md, "Embedded database and idle memory"): each setting lowers what the server's processes touch
 * without slowing svcd's queries, which read and write a handful of rows each.
 */
export function renderPrivatePostgresConf(dataDir: string): string {
  const settings: [string, string | number][] = [
    // A unix socket in the data directory and nothing else: no TCP port at all.
    ['listen_addresses', "''"],
    ['unix_socket_directories', `'${dataDir.replaceAll("'", "''")}'`],
    ['unix_socket_permissions', '0700'],
    ['port', PORT],
    // svcd's pool (open-database.ts) plus a few for an operator's psql; when the server is a cluster's
    // database (cluster/database-tunnel.ts), every member's pool too (each member's backends close when idle).
    ['max_connections', 64],
    ['superuser_reserved_connections', 2],
    // The whole database is a few MiB: PostgreSQL's 128 MiB default would only grow every backend's PSS.
    ['shared_buffers', "'16MB'"],
    ['wal_buffers', "'1MB'"],
    ['work_mem', "'4MB'"],
    ['temp_buffers', "'1MB'"],
    ['maintenance_work_mem', "'16MB'"],
    ['huge_pages', 'off'],
    // No replication, no parallel query, no background workers: fewer processes.
    ['wal_level', 'minimal'],
    ['max_wal_senders', 0],
    ['max_worker_processes', 0],
    ['max_parallel_workers', 0],
    ['max_parallel_workers_per_gather', 0],
    ['max_logical_replication_workers', 0],
    // svcd vacuums its tables itself (src/db/own-vacuum.ts): no launcher process at idle. PostgreSQL still
    // starts an anti-wraparound vacuum on its own when one is due.
    ['autovacuum', 'off'],
    ['autovacuum_max_workers', 1],
    ['max_wal_size', "'64MB'"],
    ['min_wal_size', "'32MB'"],
    // A commit does not wait for its WAL flush; the WAL writer flushes within 20 ms (it sleeps when there
    // is nothing to write). Measured on this machine: create 63.6 → 15.6 ms, start 109 → 43.4 ms, delete
    // 51.4 → 22.9 ms (docs/database.md). What a crash of the server or of the OS can cost is the last ~20-60 ms of
    // acknowledged writes, never a half-applied one (fsync stays on). PGlite, the other embedded engine,
    // never calls fsync at all (its file system layer has none), so an OS crash may cost it more.
    ['synchronous_commit', 'off'],
    ['wal_writer_delay', "'20ms'"],
    ['wal_writer_flush_after', 0],
    ['logging_collector', 'off'],
    ['log_min_messages', 'warning'],
    ['log_line_prefix', "'%m [%p] '"],
    ['datestyle', "'iso, mdy'"],
    ['timezone', "'UTC'"],
    ['lc_messages', "'C'"],
    ['default_text_search_config', "'pg_catalog.english'"],
  ];
  return `# Written by svcd on every start (src/host/postgres/private-postgres-args.ts); edits are lost.\n${settings.map(([k, v]) => `${k} = ${v}`).join('\n')}\n`;
}

/**
 * pg_hba.conf of the private server (written on every start and adoption). svcd's own superuser logs in
 * over the 0700 socket unchecked; any other role, which only cluster members use (through the database
 * tunnel, which never lets the superuser through), with its password.
 */
export function renderPrivatePostgresHba(): string {
  return [
    '# Written by svcd on every start (src/host/postgres/private-postgres-args.ts); edits are lost.',
    `local all ${PRIVATE_POSTGRES_USER} trust`,
    'local all all scram-sha-256',
    '',
  ].join('\n');
}

/** initdb: UTF-8, C locale, a `svcd` superuser, local connections trusted. */
export function initdbArgs(dataDir: string): string[] {
  return ['-D', dataDir, '-U', PRIVATE_POSTGRES_USER, '--auth=trust', '-E', 'UTF8', '--locale=C'];
}

/** pg_ctl start: waits until the server accepts connections; the server detaches (its own session). */
/**
 * `-W`: pg_ctl returns once the postmaster is forked, and svcd waits for it to say ready in postmaster.pid
 * (private-postgres.ts looks every 10 ms; pg_ctl's own wait looks every 100 ms, 50 ms of every start on average).
 */
export function pgCtlStartArgs(dataDir: string, logFile: string): string[] {
  return ['start', '-D', dataDir, '-l', logFile, '-W', '-s'];
}

export function pgCtlReloadArgs(dataDir: string): string[] {
  return ['reload', '-D', dataDir, '-s'];
}

export function pgCtlStopArgs(dataDir: string): string[] {
  return ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60', '-s'];
}

/** postgres.js connection URL: the `host` query parameter names the socket directory (open-database.ts). */
export function privatePostgresUrl(dataDir: string): string {
  return `postgres://${PRIVATE_POSTGRES_USER}@localhost:${PORT}/postgres?host=${encodeURIComponent(dataDir)}`;
}

/**
 * The postmaster's pid, the socket directory and its status (line 8: starting, ready, standby or stopping; '' before
 * it wrote one) from the text of `postmaster.pid`; undefined when unreadable.
 */
export function parsePostmasterPid(
  text: string,
): { pid: number; dataDir: string; socketDir: string; status: string } | undefined {
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, dataDir: lines[1] ?? '', socketDir: lines[4] ?? '', status: (lines[7] ?? '').trim() };
}

/** uid and gid of a user from the text of /etc/passwd. */
export function parsePasswdUser(text: string, name: string): { uid: number; gid: number } | undefined {
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) {
      const uid = Number(f[2]);
      const gid = Number(f[3]);
      if (Number.isInteger(uid) && Number.isInteger(gid) && f[2] !== '' && f[3] !== '') return { uid, gid };
    }
  }
  return undefined;
}

/**
 * Pure decisions about svcd's private PostgreSQL server when svcd starts: which installed server
 * binaries serve the data directory, and whether a postmaster left running by the previous svcd may
 * be adopted. A package upgrade (dpkg unlinks the old `postgres` and renames the new one in) leaves
 * that postmaster running a deleted binary: every backend it forks then loads the *new* extension
 * libraries (plpgsql.so: "undefined symbol"), so it must be restarted on the installed binary. A new
 * major version cannot read the data at all: svcd refuses and says what to do, and touches nothing.
 */

/**
 * The data directory cannot be served by the installed server (another major version, or none installed):
 * svcd exits with {@link REFUSED_EXIT_CODE}, which its unit does not restart (the message says what to do).
 */
export class EmbeddedDatabaseRefused extends Error {}
export const REFUSED_EXIT_CODE = 3;

/** A file's identity: what /proc/<pid>/exe and the installed binary are compared by (a path may name a new file). */
export interface FileIdentity {
  dev: number;
  ino: number;
}

export interface InstalledServer {
  /** The bin directory (pg_ctl, postgres, initdb). */
  dir: string;
  major: number;
}

export type ServerAdoption =
  | { action: 'start' }
  | { action: 'adopt' }
  | { action: 'restart'; reason: string }
  | { action: 'refuse'; message: string };

/**
 * What to do with the data directory and its server. `runningExe` is the postmaster's /proc/<pid>/exe
 * (its link text, and the identity of the file it runs, unknown when /proc cannot tell: then it is
 * adopted, and the open-time probe still catches a stale server: {@link isStaleServerError}).
 */
export function computeServerAdoption(input: {
  dataDir: string;
  dataMajor: number | undefined;
  installed: InstalledServer;
  installedExe: FileIdentity;
  running?: { pid: number; exe: string; identity?: FileIdentity | undefined } | undefined;
}): ServerAdoption {
  const { dataMajor, installed, running } = input;
  if (dataMajor !== undefined && dataMajor !== installed.major)
    return {
      action: 'refuse',
      message: majorMismatchMessage({ dataDir: input.dataDir, dataMajor, installed: [installed] }),
    };
  if (!running) return { action: 'start' };
  if (running.exe.endsWith(' (deleted)'))
    return {
      action: 'restart',
      reason: `postmaster ${running.pid} runs ${running.exe}: its binary was replaced by a package upgrade`,
    };
  if (
    running.identity &&
    (running.identity.dev !== input.installedExe.dev || running.identity.ino !== input.installedExe.ino)
  )
    return {
      action: 'restart',
      reason: `postmaster ${running.pid} runs ${running.exe}, another file than the installed ${installed.dir}/postgres`,
    };
  return { action: 'adopt' };
}

/**
 * The server binaries for a data directory of `dataMajor` (undefined: no cluster yet, the newest is
 * used): the same major or nothing (refused with what to do). A configured bin dir is the only candidate.
 */
export function chooseInstalledServer(input: {
  dataDir: string;
  dataMajor: number | undefined;
  installed: readonly InstalledServer[];
  configured?: string | undefined;
}): { server: InstalledServer } | { refuse: string } {
  const { installed, dataMajor } = input;
  if (installed.length === 0) {
    const where = input.configured
      ? `SVCD_POSTGRES_BIN (${input.configured}) holds no PostgreSQL server (pg_ctl, postgres)`
      : 'no PostgreSQL server binaries in /usr/lib/postgresql/*/bin';
    return {
      refuse: `${where}: apt-get install postgresql-${dataMajor ?? 15}${dataMajor !== undefined ? ` (the embedded database in ${input.dataDir} is PostgreSQL ${dataMajor}'s; svcd has not touched it)` : ''}`,
    };
  }
  const newestFirst = [...installed].sort((a, b) => b.major - a.major);
  if (dataMajor === undefined) return { server: newestFirst[0]! };
  const same = newestFirst.find((s) => s.major === dataMajor);
  if (same) return { server: same };
  return {
    refuse: majorMismatchMessage({
      dataDir: input.dataDir,
      dataMajor,
      installed: newestFirst,
      configured: input.configured,
    }),
  };
}

/** The refusal for data of a major version the installed server cannot read: what happened, and the exact way out. */
export function majorMismatchMessage(input: {
  dataDir: string;
  dataMajor: number;
  installed: readonly InstalledServer[];
  configured?: string | undefined;
}): string {
  const { dataDir: d, dataMajor: n } = input;
  const newest = input.installed[0]!;
  const has = input.installed.map((s) => `${s.major} (${s.dir})`).join(', ');
  const head =
    `the embedded database in ${d} was made by PostgreSQL ${n}, but ${input.configured ? `SVCD_POSTGRES_BIN (${input.configured}) holds` : 'the installed server is'} PostgreSQL ${has}, which cannot read it. ` +
    `svcd has not touched the data. Install PostgreSQL ${n}'s server again: apt-get install postgresql-${n}${input.configured ? ' (and unset SVCD_POSTGRES_BIN, or point it at its bin directory)' : ''}, and start svcd.`;
  if (newest.major < n)
    return `${head} (A data directory cannot be moved to an older major version; pg_dump it with PostgreSQL ${n} and restore it into a new cluster instead.)`;
  const oldBin = `/usr/lib/postgresql/${n}/bin`;
  const next = `${d}.${newest.major}`;
  return (
    `${head} Or, to move it to PostgreSQL ${newest.major} (postgresql-${n} must be installed for this too): stop svcd; ` +
    `runuser -u postgres -- ${oldBin}/pg_ctl stop -D ${d} -m fast; ` +
    `install -d -o postgres -g postgres -m 0700 ${next}; ` +
    `runuser -u postgres -- ${newest.dir}/initdb -D ${next} -U svcd --auth=trust -E UTF8 --locale=C; ` +
    `cd /tmp && runuser -u postgres -- ${newest.dir}/pg_upgrade -b ${oldBin} -B ${newest.dir} -d ${d} -D ${next} -U svcd; ` +
    `mv ${d} ${d}.${n}; mv ${next} ${d}; start svcd (keep ${d}.${n} until svcd runs well, then remove it).`
  );
}

/** The version of `postgres --version` ("postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)"). */
export function parsePostgresVersion(text: string): { major: number; version: string } | undefined {
  const m = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(text);
  return m ? { major: Number(m[1]), version: m[2] !== undefined ? `${m[1]}.${m[2]}` : m[1]! } : undefined;
}

/** The major version in a data directory's PG_VERSION ("15\n"); undefined when unreadable. */
export function parsePgVersionFile(text: string): number | undefined {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

/** Bin directories of Debian's layout (/usr/lib/postgresql/<major>/bin) from the names in /usr/lib/postgresql. */
export function debianServerDirs(root: string, names: readonly string[]): InstalledServer[] {
  return names.filter((n) => /^\d+$/.test(n)).map((n) => ({ dir: `${root}/${n}/bin`, major: Number(n) }));
}

/**
 * What a backend of a server whose binary was replaced answers on its first use of an extension library
 * (the new plpgsql.so against the old postgres): the fallback that still restarts such a server when
 * /proc could not tell.
 */
export function isStaleServerError(err: unknown): boolean {
  const text =
    err instanceof Error ? `${err.message} ${String((err as { detail?: unknown }).detail ?? '')}` : String(err);
  return /could not load library|incompatible library/i.test(text);
}

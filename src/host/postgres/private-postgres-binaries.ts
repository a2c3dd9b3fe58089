/**
 * Which PostgreSQL binaries serve the private server's data directory, and as which system user: Debian's
 * server packages by major version (or the one bin directory configured), chosen for the data directory's
 * major; data of a major not installed is refused, untouched (compute-server-adoption.ts).
 */
import { access, constants, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  chooseInstalledServer,
  debianServerDirs,
  EmbeddedDatabaseRefused,
  parsePgVersionFile,
  parsePostgresVersion,
  type InstalledServer,
} from './compute-server-adoption.ts';
import { parsePasswdUser, POSTGRES_ROOT } from './private-postgres-args.ts';

export const alive = async (pid: number): Promise<boolean> => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A reused pid is not our postmaster: it must be a postgres process whose stat is not a zombie's.
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const close = stat.lastIndexOf(')');
  return stat.slice(stat.indexOf('(') + 1, close) === 'postgres' && stat[close + 2] !== 'Z';
};

export interface ServerBinariesDeps {
  run: (
    file: string,
    args: readonly string[],
    opts: { uid: number; gid: number; timeoutMs: number },
  ) => Promise<string>;
  binDir?: string | undefined;
  postgresRoot?: string | undefined;
}

export function createServerBinaries(deps: ServerBinariesDeps, dataDir: string) {
  const owner = async () => {
    const user = parsePasswdUser(await readFile('/etc/passwd', 'utf8'), 'postgres');
    if (!user)
      throw new Error(
        'the embedded database needs the postgres system user and PostgreSQL server binaries: apt-get install postgresql-15 (scripts/start.sh does)',
      );
    return user;
  };
  const executable = (f: string) =>
    access(f, constants.X_OK).then(
      () => true,
      () => false,
    );
  const hasServer = async (dir: string) =>
    (await executable(path.join(dir, 'pg_ctl'))) && (await executable(path.join(dir, 'postgres')));
  /** The server binaries installed, by major version; a configured bin dir is the only one. */
  const installedServers = async (as: { uid: number; gid: number }): Promise<InstalledServer[]> => {
    if (deps.binDir) {
      if (!(await hasServer(deps.binDir))) return [];
      const out = await deps.run(path.join(deps.binDir, 'postgres'), ['--version'], { ...as, timeoutMs: 10_000 });
      const v = parsePostgresVersion(out);
      if (!v)
        throw new Error(
          `${deps.binDir}/postgres --version answered ${JSON.stringify(out.trim())}, not a PostgreSQL version`,
        );
      return [{ dir: deps.binDir, major: v.major }];
    }
    const root = deps.postgresRoot ?? POSTGRES_ROOT;
    const all = debianServerDirs(root, await readdir(root).catch(() => []));
    const present = await Promise.all(all.map((s) => hasServer(s.dir)));
    return all.filter((_, i) => present[i]);
  };
  /** Which binaries serve this data directory (same major, or refused with what to do: the data is never touched). */
  const chooseServer = async (as: { uid: number; gid: number }) => {
    const dataMajor = parsePgVersionFile(await readFile(path.join(dataDir, 'PG_VERSION'), 'utf8').catch(() => ''));
    const chosen = chooseInstalledServer({
      dataDir,
      dataMajor,
      installed: await installedServers(as),
      configured: deps.binDir,
    });
    if ('refuse' in chosen) throw new EmbeddedDatabaseRefused(chosen.refuse);
    return { server: chosen.server, dataMajor };
  };
  return { owner, chooseServer };
}

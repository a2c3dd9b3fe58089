/**
 * svcd's private PostgreSQL server, supervised by svcd: created (initdb) in `<stateDir>/postgres` the
 * first time, started when it is not running, adopted when it is (a previous svcd started it: a restart
 * of svcd under systemd's KillMode=process leaves it running), and started again when it dies. It runs
 * as the `postgres` system user and is reachable only through a unix socket in its 0700 data directory.
 * svcd's own stop leaves it running; `stop()` (the host-shutdown path) stops it.
 */
import { access, chmod, chown, constants, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  initdbArgs,
  parsePasswdUser,
  parsePostmasterPid,
  pgCtlStartArgs,
  pgCtlStopArgs,
  POSTGRES_BIN_DIRS,
  privatePostgresDirOf,
  privatePostgresUrl,
  renderPrivatePostgresConf,
} from './private-postgres-args.ts';

export interface PrivatePostgresDeps {
  stateDir: string;
  /** Runs a host command (src/host/exec.ts runCommand). */
  run: (file: string, args: readonly string[], opts: { uid: number; gid: number; timeoutMs: number }) => Promise<string>;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void; error(o: object, msg: string): void };
  /** How often the postmaster's liveness is checked (a signal 0 and a read of /proc, no process spawned). */
  checkIntervalMs?: number;
  /** Where the binaries are looked for (tests may point elsewhere). */
  binDirs?: readonly string[];
}

export type PrivatePostgresStart = 'created' | 'started' | 'adopted';

export interface PrivatePostgres {
  /** Create, start or adopt the server; resolves with its connection URL once it accepts connections. */
  ensure(): Promise<{ url: string; pid: number; how: PrivatePostgresStart }>;
  /** Start watching the postmaster: when it dies it is started again. */
  supervise(): void;
  /** Stop watching; the server keeps running (a restarted svcd adopts it). */
  close(): void;
  /** Stop watching and stop the server (host shutdown). */
  stop(): Promise<void>;
  /** The postmaster's pid, when known. */
  pid(): number | undefined;
}

const alive = async (pid: number): Promise<boolean> => {
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

export function createPrivatePostgres(deps: PrivatePostgresDeps): PrivatePostgres {
  const dataDir = privatePostgresDirOf(deps.stateDir);
  const logFile = path.join(dataDir, 'server.log');
  let timer: NodeJS.Timeout | undefined;
  let postmaster: number | undefined;
  let ensuring: Promise<{ url: string; pid: number; how: PrivatePostgresStart }> | undefined;

  const owner = async () => {
    const user = parsePasswdUser(await readFile('/etc/passwd', 'utf8'), 'postgres');
    if (!user) throw new Error('the embedded database needs the postgres system user and PostgreSQL server binaries: apt-get install postgresql-15 (scripts/start.sh does)');
    return user;
  };
  const binDir = async () => {
    for (const dir of deps.binDirs ?? POSTGRES_BIN_DIRS) if (await access(path.join(dir, 'pg_ctl'), constants.X_OK).then(() => true, () => false)) return dir;
    throw new Error(`no PostgreSQL server binaries in ${(deps.binDirs ?? POSTGRES_BIN_DIRS).join(', ')}: apt-get install postgresql-15 (scripts/start.sh does)`);
  };
  const runningPid = async (): Promise<number | undefined> => {
    const pm = parsePostmasterPid(await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => ''));
    return pm && (await alive(pm.pid)) ? pm.pid : undefined;
  };

  async function doEnsure(): Promise<{ url: string; pid: number; how: PrivatePostgresStart }> {
    const user = await owner();
    const bin = await binDir();
    const as = { uid: user.uid, gid: user.gid };
    let how: PrivatePostgresStart = 'started';
    const adopted = await runningPid();
    if (adopted) {
      postmaster = adopted;
      deps.log.info({ postmaster: adopted, dataDir, how: 'adopted' }, 'embedded PostgreSQL server running');
      return { url: privatePostgresUrl(dataDir), pid: adopted, how: 'adopted' };
    }
    if (!(await access(path.join(dataDir, 'PG_VERSION')).then(() => true, () => false))) {
      // No cluster (or one whose initdb was interrupted): make it afresh.
      await rm(dataDir, { recursive: true, force: true });
      await mkdir(dataDir, { mode: 0o700 });
      await chown(dataDir, user.uid, user.gid);
      await deps.run(path.join(bin, 'initdb'), initdbArgs(dataDir), { ...as, timeoutMs: 120_000 });
      how = 'created';
    }
    const conf = path.join(dataDir, 'postgresql.conf');
    await writeFile(conf, renderPrivatePostgresConf(dataDir), { mode: 0o600 });
    await chown(conf, user.uid, user.gid);
    await chmod(dataDir, 0o700);
    await deps.run(path.join(bin, 'pg_ctl'), pgCtlStartArgs(dataDir, logFile), { ...as, timeoutMs: 90_000 }).catch(async (e: unknown) => {
      const tail = (await readFile(logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-5).join('\n');
      throw new Error(`the embedded PostgreSQL server did not start: ${e instanceof Error ? e.message : String(e)}${tail ? `\n${tail}` : ''}`);
    });
    const pid = await runningPid();
    if (!pid) throw new Error(`the embedded PostgreSQL server in ${dataDir} started but its postmaster.pid names no live postgres process`);
    postmaster = pid;
    deps.log.info({ postmaster: pid, dataDir, how }, 'embedded PostgreSQL server running');
    return { url: privatePostgresUrl(dataDir), pid, how };
  }

  const ensure = () => {
    ensuring ??= doEnsure().finally(() => {
      ensuring = undefined;
    });
    return ensuring;
  };

  async function check(): Promise<void> {
    if (ensuring || postmaster === undefined || (await alive(postmaster))) return;
    deps.log.warn({ postmaster, dataDir }, 'the embedded PostgreSQL server is gone: starting it again');
    await ensure().then(
      ({ pid }) => deps.log.info({ postmaster: pid }, 'embedded PostgreSQL server started again'),
      (err: unknown) => deps.log.error({ err }, 'cannot start the embedded PostgreSQL server again (next try in a moment)'),
    );
  }

  return {
    ensure,
    supervise() {
      if (timer) return;
      timer = setInterval(() => void check(), deps.checkIntervalMs ?? 1_000);
      timer.unref();
    },
    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
    async stop() {
      this.close();
      if (!(await runningPid())) return;
      const user = await owner();
      await deps.run(path.join(await binDir(), 'pg_ctl'), pgCtlStopArgs(dataDir), { uid: user.uid, gid: user.gid, timeoutMs: 90_000 });
    },
    pid: () => postmaster,
  };
}

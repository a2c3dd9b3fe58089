/**
 * svcd's private PostgreSQL server, supervised by svcd: created (initdb) in `<stateDir>/postgres` the
 * first time, started when it is not running, adopted when it is (a previous svcd started it: a restart
 * of svcd under systemd's KillMode=process leaves it running), and started again when it dies. It runs
 * as the `postgres` system user and is reachable only through a unix socket in its 0700 data directory.
 * svcd's own stop leaves it running; `stop()` (the host-shutdown path) stops it. The binaries are those of
 * the data directory's major version (compute-server-adoption.ts): a postmaster whose binary a package
 * upgrade replaced is restarted on the installed one (fast shutdown, then start), at adoption and while
 * supervised; data of a major version not installed is refused, untouched, with what to do.
 */
import { access, chmod, chown, mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  initdbArgs,
  parsePostmasterPid,
  pgCtlReloadArgs,
  pgCtlStartArgs,
  pgCtlStopArgs,
  privatePostgresDirOf,
  privatePostgresUrl,
  renderPrivatePostgresConf,
  renderPrivatePostgresHba,
} from './private-postgres-args.ts';
import { computeServerAdoption, EmbeddedDatabaseRefused } from './compute-server-adoption.ts';
import { alive, createServerBinaries } from './private-postgres-binaries.ts';

export interface PrivatePostgresDeps {
  stateDir: string;
  /** Runs a host command (src/host/exec.ts runCommand). */
  run: (
    file: string,
    args: readonly string[],
    opts: { uid: number; gid: number; timeoutMs: number },
  ) => Promise<string>;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void; error(o: object, msg: string): void };
  /** How often the postmaster's liveness is checked (a signal 0 and a read of /proc, no process spawned). */
  checkIntervalMs?: number;
  /**
   * A binary replaced under the running server (an upgrade while svcd runs) is acted on once the installed
   * `postgres` has not changed for this long (ms, default 10 s): not between dpkg's renames of the binary
   * and of the libraries it goes with.
   */
  binarySettleMs?: number;
  /**
   * The one bin directory to use (SVCD_POSTGRES_BIN): its major version is asked of its `postgres`.
   * Unset: Debian's /usr/lib/postgresql/<major>/bin of the data directory's major (the newest for a new cluster).
   */
  binDir?: string | undefined;
  /** Debian's root of the server packages (tests may point elsewhere). */
  postgresRoot?: string;
}

export type PrivatePostgresStart = 'created' | 'started' | 'adopted' | 'restarted';

export interface PrivatePostgres {
  /** Create, start or adopt the server; resolves with its connection URL once it accepts connections. */
  ensure(): Promise<{ url: string; pid: number; how: PrivatePostgresStart }>;
  /**
   * Stop the running server (fast shutdown: a clean checkpoint, nothing lost) and start it on the installed
   * binary: when it proved stale after an adoption ({@link isStaleServerError}).
   */
  restart(reason: string): Promise<{ url: string; pid: number; how: PrivatePostgresStart }>;
  /** Start watching the postmaster: when it dies it is started again. */
  supervise(): void;
  /** Stop watching; the server keeps running (a restarted svcd adopts it). */
  close(): void;
  /** Stop watching and stop the server (host shutdown). */
  stop(): Promise<void>;
  /** The postmaster's pid, when known. */
  pid(): number | undefined;
}

export function createPrivatePostgres(deps: PrivatePostgresDeps): PrivatePostgres {
  const dataDir = privatePostgresDirOf(deps.stateDir);
  const logFile = path.join(dataDir, 'server.log');
  let timer: NodeJS.Timeout | undefined;
  let postmaster: number | undefined;
  /** The bin dir the running server was adopted or started from. */
  let serving: string | undefined;
  let ensuring: Promise<{ url: string; pid: number; how: PrivatePostgresStart }> | undefined;

  const { owner, chooseServer } = createServerBinaries(deps, dataDir);
  const runningPid = async (): Promise<number | undefined> => {
    const pm = parsePostmasterPid(await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => ''));
    return pm && (await alive(pm.pid)) ? pm.pid : undefined;
  };

  /**
   * After `pg_ctl start -W`: the postmaster's pid once its postmaster.pid says ready (crash recovery after a kill
   * or a reboot comes first). It fails when the postmaster is gone (its log says why) or after 60 s, as pg_ctl's
   * own wait did.
   */
  async function readyPostmaster(): Promise<number> {
    const deadline = Date.now() + 60_000;
    let seen = false;
    for (;;) {
      const pm = parsePostmasterPid(await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => ''));
      const live = pm ? await alive(pm.pid) : false;
      if (pm && live && (pm.status === 'ready' || pm.status === 'standby')) return pm.pid;
      if (pm && live) seen = true;
      else if (seen || (pm && !live)) throw new Error('the postmaster exited during its start');
      if (Date.now() > deadline) throw new Error('the postmaster did not become ready within 60 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Write pg_hba.conf when it differs from svcd's; true when it was written. */
  async function writeHba(user: { uid: number; gid: number }): Promise<boolean> {
    const file = path.join(dataDir, 'pg_hba.conf');
    const want = renderPrivatePostgresHba();
    if ((await readFile(file, 'utf8').catch(() => '')) === want) return false;
    await writeFile(file, want, { mode: 0o600 });
    await chown(file, user.uid, user.gid);
    return true;
  }

  async function doEnsure(forceRestart?: string): Promise<{ url: string; pid: number; how: PrivatePostgresStart }> {
    const user = await owner();
    const as = { uid: user.uid, gid: user.gid };
    const { server, dataMajor } = await chooseServer(as);
    const bin = server.dir;
    let how: PrivatePostgresStart = 'started';
    const adopted = await runningPid();
    const installedExe = await stat(path.join(bin, 'postgres'));
    const running = adopted
      ? {
          pid: adopted,
          exe: await readlink(`/proc/${adopted}/exe`).catch(() => ''),
          identity: await stat(`/proc/${adopted}/exe`).then(
            (s) => ({ dev: s.dev, ino: s.ino }),
            () => undefined,
          ),
        }
      : undefined;
    const decision = computeServerAdoption({
      dataDir,
      dataMajor,
      installed: server,
      installedExe: { dev: installedExe.dev, ino: installedExe.ino },
      running,
    });
    if (decision.action === 'refuse') throw new EmbeddedDatabaseRefused(decision.message);
    const reason = decision.action === 'restart' ? decision.reason : adopted ? forceRestart : undefined;
    if (adopted && decision.action === 'adopt' && !reason) {
      // A server started by an older svcd may have initdb's rules: the current ones, read again at once.
      if (await writeHba(user))
        await deps.run(path.join(bin, 'pg_ctl'), pgCtlReloadArgs(dataDir), { ...as, timeoutMs: 30_000 });
      postmaster = adopted;
      serving = bin;
      deps.log.info({ postmaster: adopted, dataDir, how: 'adopted' }, 'embedded PostgreSQL server running');
      return { url: privatePostgresUrl(dataDir), pid: adopted, how: 'adopted' };
    }
    if (adopted && reason) {
      // A fast shutdown: clients are disconnected, a checkpoint is written, nothing acknowledged is lost.
      deps.log.warn(
        { postmaster: adopted, dataDir, reason, bin },
        'restarting the embedded PostgreSQL server on the installed binary',
      );
      await deps
        .run(path.join(bin, 'pg_ctl'), pgCtlStopArgs(dataDir), { ...as, timeoutMs: 90_000 })
        .catch((e: unknown) => {
          throw new Error(
            `cannot stop the embedded PostgreSQL server (postmaster ${adopted}) to restart it on the installed binary: ${e instanceof Error ? e.message : String(e)}`,
          );
        });
      how = 'restarted';
    }
    if (
      !(await access(path.join(dataDir, 'PG_VERSION')).then(
        () => true,
        () => false,
      ))
    ) {
      // No cluster (or one whose initdb was interrupted): make it afresh.
      await rm(dataDir, { recursive: true, force: true });
      await mkdir(dataDir, { mode: 0o700 });
      await chown(dataDir, user.uid, user.gid);
      await deps.run(path.join(bin, 'initdb'), initdbArgs(dataDir), { ...as, timeoutMs: 120_000 });
      how = 'created';
    }
    if (!adopted) {
      // A postmaster.pid naming no live postmaster of ours is stale: its pid is a zombie nobody reaps, or after a
      // reboot another process's. PostgreSQL refuses to start while that pid exists at all, so it goes (the
      // shared memory interlock still stops a start beside orphaned backends).
      const stale = parsePostmasterPid(await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => ''));
      if (stale) {
        deps.log.warn(
          { pid: stale.pid, dataDir },
          "removing a stale postmaster.pid (its pid is not this data directory's live postmaster)",
        );
        await rm(path.join(dataDir, 'postmaster.pid'), { force: true });
        // The socket's lock file names the same pid, and is refused the same way.
        for (const f of await readdir(stale.socketDir || dataDir).catch(() => [] as string[])) {
          if (/^\.s\.PGSQL\.\d+\.lock$/.test(f)) await rm(path.join(stale.socketDir || dataDir, f), { force: true });
        }
      }
    }
    const conf = path.join(dataDir, 'postgresql.conf');
    await writeFile(conf, renderPrivatePostgresConf(dataDir), { mode: 0o600 });
    await chown(conf, user.uid, user.gid);
    await writeHba(user);
    await chmod(dataDir, 0o700);
    const pid = await deps
      .run(path.join(bin, 'pg_ctl'), pgCtlStartArgs(dataDir, logFile), { ...as, timeoutMs: 90_000 })
      .then(() => readyPostmaster())
      .catch(async (e: unknown) => {
        const tail = (await readFile(logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-5).join('\n');
        throw new Error(
          `the embedded PostgreSQL server did not start: ${e instanceof Error ? e.message : String(e)}${tail ? `\n${tail}` : ''}`,
        );
      });
    postmaster = pid;
    serving = bin;
    deps.log.info({ postmaster: pid, dataDir, how, bin }, 'embedded PostgreSQL server running');
    return { url: privatePostgresUrl(dataDir), pid, how };
  }

  const ensure = (forceRestart?: string) => {
    ensuring ??= doEnsure(forceRestart).finally(() => {
      ensuring = undefined;
    });
    return ensuring;
  };

  /** The running postmaster's binary is no longer the installed one, and the installed one has settled (two stats). */
  const replacedUnder = async (pid: number, bin: string): Promise<boolean> => {
    const [running, installed] = await Promise.all([
      stat(`/proc/${pid}/exe`).catch(() => undefined),
      stat(path.join(bin, 'postgres')).catch(() => undefined),
    ]);
    if (!running || !installed || (running.dev === installed.dev && running.ino === installed.ino)) return false;
    return Date.now() - installed.ctimeMs >= (deps.binarySettleMs ?? 10_000);
  };

  async function check(): Promise<void> {
    if (ensuring || postmaster === undefined) return;
    if (await alive(postmaster)) {
      // An upgrade while svcd runs: ensure() sees the replaced binary and restarts the server on the new one.
      if (!serving || !(await replacedUnder(postmaster, serving))) return;
      await ensure().then(
        ({ pid, how }) =>
          deps.log.info({ postmaster: pid, how }, 'embedded PostgreSQL server running on the installed binary'),
        (err: unknown) =>
          deps.log.error(
            { err },
            'cannot restart the embedded PostgreSQL server on the installed binary (next try in a moment)',
          ),
      );
      return;
    }
    deps.log.warn({ postmaster, dataDir }, 'the embedded PostgreSQL server is gone: starting it again');
    await ensure().then(
      ({ pid }) => deps.log.info({ postmaster: pid }, 'embedded PostgreSQL server started again'),
      (err: unknown) =>
        deps.log.error({ err }, 'cannot start the embedded PostgreSQL server again (next try in a moment)'),
    );
  }

  return {
    ensure: () => ensure(),
    restart: (reason: string) => ensure(reason),
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
      const as = { uid: user.uid, gid: user.gid };
      await deps.run(path.join((await chooseServer(as)).server.dir, 'pg_ctl'), pgCtlStopArgs(dataDir), {
        ...as,
        timeoutMs: 90_000,
      });
    },
    pid: () => postmaster,
  };
}

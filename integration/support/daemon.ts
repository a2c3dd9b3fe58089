import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { parsePostmasterPid, privatePostgresDirOf } from '../../src/host/postgres/private-postgres-args.ts';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from './http.ts';
import { cleanupHostUnder } from './host-cleanup.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Daemon {
  stateDir: string;
  socketPath: string;
  proc: ChildProcess;
  /** Everything the daemon printed (JSON log lines). */
  output(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL (a crash) and wait for exit. */
  kill(): Promise<void>;
  /** Start again on the same state directory (and database). */
  restart(): Promise<void>;
  /** Stop and remove the state directory. */
  destroy(): Promise<void>;
}

export interface DaemonOptions {
  databaseUrl?: string;
  env?: Record<string, string>;
  stateDir?: string;
  /** The argv that starts it (default: node through tsx on src/main.ts). */
  command?: string[];
}

/** Start svcd as a process, as a user would, and wait until its unix socket answers. */
export async function startDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  // Short path: unix socket paths are limited to 108 bytes.
  const stateDir = opts.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), 'svcd-e2e-')));
  const socketPath = path.join(stateDir, 'unix.socket');
  let proc!: ChildProcess;
  let out = '';
  const launch = async () => {
    out = '';
    const [file, ...args] = opts.command ?? [process.execPath, '--import', 'tsx', path.join(repoRoot, 'src/main.ts')];
    proc = spawn(file!, args, {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
        HOME: process.env.HOME ?? '/root',
        SVCD_DIR: stateDir,
        SVCD_LOG_LEVEL: 'debug',
        ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl } : {}),
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`svcd exited with ${proc.exitCode} at start:\n${out}`);
      try {
        const res = await request({ socketPath }, 'GET', '/1.0');
        if (res.status === 200) return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) {
        // Do not leave a half-started daemon behind (it would keep the test process alive).
        proc.kill('SIGKILL');
        throw new Error(`svcd did not answer within 60 s:\n${out}`);
      }
      // 25 ms: the benches time a start by this loop (reboot-bench's "API answering")
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const exited = () =>
    new Promise<number | null>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
      proc.once('exit', (code) => resolve(code));
    });
  await launch();
  const daemon: Daemon = {
    stateDir,
    socketPath,
    get proc() {
      return proc;
    },
    output: () => out,
    async stop() {
      const done = exited();
      proc.kill('SIGTERM');
      return done;
    },
    async kill() {
      const done = exited();
      proc.kill('SIGKILL');
      await done;
    },
    restart: launch,
    async destroy() {
      if (proc.exitCode === null && proc.signalCode === null) await daemon.stop();
      await stopPrivatePostgres(stateDir);
      if (opts.stateDir) return;
      // a pool on a loop file (btrfs) stays mounted after the daemon stops: unmount it first
      await cleanupHostUnder(stateDir);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
  return daemon;
}

/** svcd leaves its embedded PostgreSQL server running when it stops (a restart adopts it): stop it (fast shutdown). */
async function stopPrivatePostgres(stateDir: string): Promise<void> {
  const pm = parsePostmasterPid(
    await readFile(path.join(privatePostgresDirOf(stateDir), 'postmaster.pid'), 'utf8').catch(() => ''),
  );
  if (!pm) return;
  const gone = () => {
    try {
      process.kill(pm.pid, 0);
      return false;
    } catch {
      return true;
    }
  };
  if (gone()) return;
  process.kill(pm.pid, 'SIGINT');
  for (let i = 0; i < 100 && !gone(); i++) await new Promise((r) => setTimeout(r, 100));
}

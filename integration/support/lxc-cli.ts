import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface LxcCli {
  /** The private LXD_CONF directory (config.yml lives here). */
  conf: string;
  /** Run `lxc <args...>` (argument array, no shell), optionally feeding `input` on stdin. */
  run(args: string[], input?: string): Promise<CliResult>;
  /** Run and require exit status 0; returns stdout. */
  ok(args: string[], input?: string): Promise<string>;
  /** Run and require a non-zero exit status; returns stderr. */
  fail(args: string[], input?: string): Promise<string>;
  /** Run `lxc <args...>` on a terminal (a pty from script(1)), as a user would: what lxc shows only there (progress). */
  terminal(args: string[]): Promise<CliResult>;
  /** Start a long-running command (e.g. `lxc monitor`); the caller kills it. */
  spawn(args: string[]): ChildProcess;
  /** Remove the private LXD_CONF. */
  cleanup(): Promise<void>;
}

/** The LXD_CONF directories made in this process and not cleaned up yet: removed when it exits, whatever the test did. */
const madeConfs = new Set<string>();
process.once('exit', () => {
  for (const dir of madeConfs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The real `lxc` CLI pointed at a daemon's state directory with a private, throw-away LXD_CONF,
 * so a user's configuration is never read or touched and only the unix socket is used.
 */
export async function lxcCli(stateDir: string): Promise<LxcCli> {
  const conf = await mkdtemp(path.join(os.tmpdir(), 'svcd-lxc-conf-'));
  madeConfs.add(conf);
  const env = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: conf,
    LXD_DIR: stateDir,
    LXD_CONF: conf,
    EDITOR: '/bin/false',
    VISUAL: '/bin/false',
  };
  const describe = (args: string[], r: CliResult) =>
    `lxc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
  const run = (args: string[], input?: string) =>
    new Promise<CliResult>((resolve, reject) => {
      const child = execFile(
        'lxc',
        args,
        { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err && typeof err.code !== 'number') return reject(err);
          resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
        },
      );
      child.stdin?.on('error', () => {});
      child.stdin?.end(input ?? '');
    });
  return {
    conf,
    run,
    async ok(args, input) {
      const r = await run(args, input);
      if (r.code !== 0) throw new Error(`expected success: ${describe(args, r)}`);
      return r.stdout;
    },
    async fail(args, input) {
      const r = await run(args, input);
      if (r.code === 0) throw new Error(`expected failure: ${describe(args, r)}`);
      return r.stderr;
    },
    terminal: (args) =>
      new Promise<CliResult>((resolve, reject) => {
        // script(1) runs its command with a shell: each argument single-quoted; the pty gets a size (lxc cuts its
        // progress line to the terminal's width, and a new pty has none).
        const line = `stty cols 160 rows 40; ${['lxc', ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}`;
        execFile(
          'script',
          ['-qec', line, '/dev/null'],
          { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
          (err, stdout, stderr) => {
            if (err && typeof err.code !== 'number') return reject(err);
            resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
          },
        );
      }),
    spawn: (args) => spawn('lxc', args, { env, stdio: ['ignore', 'pipe', 'pipe'] }),
    cleanup: async () => {
      await rm(conf, { recursive: true, force: true });
      madeConfs.delete(conf);
    },
  };
}

import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './daemon.ts';

export interface SvcdRun {
  code: number | null;
  out: string;
  err: string;
}

/**
 * The `svcd` command as a user runs it (a process, through tsx on src/cli/svcd.ts), with the unix
 * socket of the state directory `dir` (SVCD_DIR: svcd's, or LXD_DIR for Debian's LXD), and `input` on stdin.
 */
export function svcdCli(dir: string) {
  return (args: string[], input?: string): Promise<SvcdRun> =>
    new Promise((resolve, reject) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src/cli/svcd.ts'), ...args], {
        cwd: repoRoot,
        env: {
          PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
          HOME: process.env.HOME ?? '/root',
          SVCD_DIR: dir,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
      proc.on('error', reject);
      proc.on('close', (code) => resolve({ code, out, err }));
      proc.stdin.end(input ?? '');
    });
}

/** The plan lines of an apply or diff (its stdout), one per element. */
export const planLines = (r: SvcdRun) => r.out.trimEnd().split('\n');

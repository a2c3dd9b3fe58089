import { readFileSync, statSync } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  runCommand,
  spawnProcess,
  spawnPty,
  type ProcessExit,
  type PtyProcess,
  type SpawnedProcess,
  type StdioTarget,
} from '../exec.ts';
import { lxcArgs, type LxcRef } from './lxc-args.ts';

export interface RunInContainerInput extends LxcRef {
  command: readonly string[];
  /** The command's whole environment (lxc-attach --clear-env); default a PATH only. */
  env?: Readonly<Record<string, string>>;
  input?: string | Buffer;
  signal?: AbortSignal;
  timeoutMs?: number;
}

const DEFAULT_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

/** Run a command inside a running container (`lxc-attach`); resolves with its stdout, rejects with HostCommandError. */
export async function runInContainer(i: RunInContainerInput): Promise<string> {
  return runCommand('lxc-attach', lxcArgs.attach(i, i.command, i.env ?? DEFAULT_ENV), {
    signal: i.signal,
    timeoutMs: i.timeoutMs ?? 60_000,
    input: i.input,
  });
}

// --- exec: a command attached to the caller's streams or a PTY ------------------------------

export interface AttachSpec extends LxcRef {
  command: readonly string[];
  /** The command's whole environment (`--clear-env` plus these). */
  env: Readonly<Record<string, string>>;
  uid?: number;
  gid?: number;
  /** Absolute working directory inside the container; empty: root's home (`/root`, or `/` where absent). */
  cwd: string;
  /** The container's `lxc.log`: lxc-attach then logs only errors there (see lxcArgs.attach). */
  logFile?: string;
  /**
   * A root-only host directory: run lxc-attach from the spawn helper's private copy made there, which
   * skips its self-copy (private_copy in svcd-spawn.c). Only for a container whose user namespace does not map
   * host root (`mapsHostRoot`).
   */
  copyIn?: string;
}

/** Whether a uid_map (`/proc/<pid>/uid_map`: inside, outside, count per line) maps host uid 0; true when unreadable. */
export function uidMapHasHostRoot(map: string): boolean {
  const lines = map.split('\n').filter((l) => l.trim());
  if (lines.length === 0) return true;
  return lines.some((line) => {
    const [, outside, count] = line.trim().split(/\s+/).map(Number);
    if (!Number.isInteger(outside) || !Number.isInteger(count)) return true;
    return outside! <= 0 && outside! + count! > 0;
  });
}

/**
 * Whether the user namespace of process `pid` maps host uid 0 (a privileged container, or an id map
 * that gives it host root); true when that cannot be read. Read synchronously: a procfs file of a
 * few lines, on every exec (a thread-pool round trip costs more than the read).
 */
export function mapsHostRoot(pid: number): boolean {
  let map = '';
  try {
    map = readFileSync(`/proc/${pid}/uid_map`, 'utf8');
  } catch {
    // unreadable: treated as mapping host root
  }
  return uidMapHasHostRoot(map);
}

/** `cd` to `$1`, then exec the rest: the working directory of an exec (lxc-attach 5.0 has no option for it). */
const CD_THEN_EXEC = 'cd -- "$1" || exit 1; shift; exec "$@"';

/**
 * argv and host working directory for `lxc-attach` running `spec`. lxc-attach enters the container
 * at the path of its own working directory (when that exists inside, else at `/`), so the default
 * home needs no helper; an explicit `cwd` goes through the container's `/bin/sh`.
 */
export function attachCommand(spec: AttachSpec): { args: string[]; hostCwd: string } {
  const ids = {
    ...(spec.uid !== undefined ? { uid: spec.uid } : {}),
    ...(spec.gid !== undefined ? { gid: spec.gid } : {}),
    ...(spec.logFile !== undefined ? { logFile: spec.logFile } : {}),
  };
  if (spec.cwd)
    return {
      args: lxcArgs.attach(spec, ['/bin/sh', '-c', CD_THEN_EXEC, 'sh', spec.cwd, ...spec.command], spec.env, ids),
      hostCwd: '/',
    };
  const home = (spec.uid ?? 0) === 0 ? '/root' : '/';
  return { args: lxcArgs.attach(spec, spec.command, spec.env, ids), hostCwd: hostHasDirectory(home) ? home : '/' };
}

/** Whether the host has directory `p` (synchronous: an exec's spawn is sent without an event-loop turn; kept 10 s). */
const seenDirs = new Map<string, { is: boolean; at: number }>();
function hostHasDirectory(p: string): boolean {
  const known = seenDirs.get(p);
  if (known && Date.now() - known.at < 10_000) return known.is;
  let is = false;
  try {
    is = statSync(p).isDirectory();
  } catch {
    is = false;
  }
  seenDirs.set(p, { is, at: Date.now() });
  return is;
}

/** The status LXD reports for a process: its exit code, or 128 + the number of the signal that killed it. */
export function exitStatus(e: ProcessExit): number {
  if (e.signal) return 128 + (os.constants.signals[e.signal as NodeJS.Signals] ?? 0);
  return e.exitCode ?? 1;
}

/**
 * The attached process of a running `lxc-attach` (its child in the container's pid namespace).
 * lxc-attach does not forward signals (it dies and leaves the command running), so signals for
 * the command go straight to this pid. Undefined while the attach is still being set up or once
 * the command is gone.
 */
export async function attachedChild(lxcAttachPid: number): Promise<number | undefined> {
  const children = await readFile(`/proc/${lxcAttachPid}/task/${lxcAttachPid}/children`, 'utf8').catch(() => '');
  const ownNs = await readlink(`/proc/${lxcAttachPid}/ns/pid`).catch(() => undefined);
  for (const pid of children.split(/\s+/).filter(Boolean).map(Number)) {
    const ns = await readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
    if (ns && ownNs && ns !== ownNs) return pid;
  }
  return undefined;
}

/**
 * Send signal number `sig` to the command under `lxc-attach` `pid`, waiting up to `waitMs` for it to
 * be set up; false if there was none. `alive` says whether that lxc-attach is still ours (not reaped:
 * its pid could be someone else's afterwards).
 */
export async function signalAttached(pid: number, sig: number, alive: () => boolean, waitMs = 2_000): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (!alive()) return false;
    const child = await attachedChild(pid);
    if (child !== undefined) {
      try {
        process.kill(child, sig);
        return true;
      } catch {
        return false;
      }
    }
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
}

export interface PipedAttach extends SpawnedProcess {
  /** The command's status (exit code, or 128 + signal). */
  status: Promise<number>;
  signal(sig: number): Promise<boolean>;
}

/** Start `spec` in its container with each standard stream a pipe, the null device or an open file. */
export async function attachPiped(
  spec: AttachSpec,
  stdio: { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget },
): Promise<PipedAttach> {
  const { args, hostCwd } = attachCommand(spec);
  const p = await spawnProcess('lxc-attach', args, {
    ...stdio,
    cwd: hostCwd,
    ...(spec.copyIn ? { copyIn: spec.copyIn } : {}),
  });
  let running = true;
  void p.exited.then(() => (running = false));
  return { ...p, status: p.exited.then(exitStatus), signal: (sig) => signalAttached(p.pid, sig, () => running) };
}

export interface PtyAttach extends PtyProcess {
  status: Promise<number>;
  signal(sig: number): Promise<boolean>;
}

/** Start `spec` in its container on a new PTY of `cols`×`rows` (lxc-attach relays it, window size changes included). */
export async function attachPty(spec: AttachSpec, size: { cols: number; rows: number }): Promise<PtyAttach> {
  const { args, hostCwd } = attachCommand(spec);
  const p = await spawnPty('lxc-attach', args, {
    ...size,
    cwd: hostCwd,
    ...(spec.copyIn ? { copyIn: spec.copyIn } : {}),
  });
  let running = true;
  void p.exited.then(() => (running = false));
  return { ...p, status: p.exited.then(exitStatus), signal: (sig) => signalAttached(p.pid, sig, () => running) };
}

/**
 * The forwarder processes of proxy devices (one `svcd-proxy` per device of a running container):
 * started detached in their own session (they outlive an svcd restart), found again through a pid
 * file `<stateDir>/containers/<id>/proxy/<device>.pid` ("<pid>\n<key>\n") and /proc, stopped with
 * SIGTERM, then SIGKILL. A pid file names a live forwarder only while /proc/<pid> is a running
 * svcd-proxy whose arguments hash to the file's key (a reused pid is not mistaken for it). Only
 * `startForwarder` starts one: through svcd's forwarder launcher when there is one (forwarder-launcher.ts: a
 * fork of a small C process), else spawned through the spawn helper; it waits for the forwarder's
 * `ready <pid>`, or throws with its error text. A launched forwarder's cmdline is the launcher's: its pid
 * file has a third line, its start time, which names it instead, and its arguments are kept beside it
 * (`<device>.args`, JSON) for its stop.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HostCommandError, runCommand } from '../exec.ts';
import { proxyDirOf } from '../layout.ts';
import { argsKey, argValue, forwarderArgs, forwarderBinary, forwarderKey } from './forwarder-args.ts';
import type { ForwarderLauncher } from './forwarder-launcher.ts';
import type { ForwarderSpec } from './types.ts';

export interface ForwarderDeps {
  stateDir: string;
  /** The svcd-proxy binary (default: forwarderBinary()). */
  binary?: string;
  /** /proc (tests may point elsewhere). */
  procRoot?: string;
  /** How long to wait for `ready` (default 10 s). */
  readyTimeoutMs?: number;
  /** svcd's forwarder launcher (absent: forwarders are spawned). */
  launcher?: ForwarderLauncher | undefined;
}

/** The forwarder refused its spec or did not come up: `message` is its own `error:` text. */
export class ForwarderError extends Error {
  constructor(
    readonly device: string,
    message: string,
  ) {
    super(message);
    this.name = 'ForwarderError';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * A small local file (a pid file, a procfs entry) read at once, '' when absent: these reads run in every
 * reconcile of a running container with proxies and at every observer tick, and a synchronous read of a few
 * bytes costs microseconds where an async one pays four thread-pool hand-offs.
 */
const readSmall = (file: string): string => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
};
const pidFileOf = (stateDir: string, id: string, device: string) =>
  path.join(proxyDirOf(stateDir, id), `${encodeURIComponent(device)}.pid`);
const argsFileOf = (pidFile: string) => pidFile.replace(/\.pid$/, '.args');
/** Field 22 of /proc/<pid>/stat (after the comm, which may hold spaces and parentheses). */
const startTimeOf = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
/** Whether a /proc/<pid>/stat text ('' when gone) is a running process: not exited, not a zombie. */
const isRunning = (stat: string) => stat !== '' && !/^\d+ \(.*\) [ZX] /s.test(stat);

/** The arguments of live process `pid` when it is a running (not zombie) svcd-proxy; else undefined. */
function forwarderCmdline(procRoot: string, pid: number): string[] | undefined {
  const dir = path.join(procRoot, String(pid));
  if (!isRunning(readSmall(path.join(dir, 'stat')))) return undefined;
  const cmdline = readSmall(path.join(dir, 'cmdline'));
  const argv = cmdline.split('\0');
  if (argv.at(-1) === '') argv.pop();
  return path.basename(argv[0] ?? '') === 'svcd-proxy' ? argv.slice(1) : undefined;
}

/** Has `pid` finished exiting (gone, or a zombie)? */
const exited = (procRoot: string, pid: number) => !isRunning(readSmall(path.join(procRoot, String(pid), 'stat')));

/** The forwarder of a container's device when it is alive: its pid and key. Spawns nothing. */
export async function readForwarder(
  containerId: string,
  device: string,
  deps: ForwarderDeps,
): Promise<{ pid: number; key: string } | undefined> {
  const text = readSmall(pidFileOf(deps.stateDir, containerId, device));
  const [pidText = '', key = '', started = ''] = text.split('\n');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || !key) return undefined;
  if (started) {
    // Launched: the same process while its start time is the one it wrote (a reused pid has another).
    const stat = readSmall(path.join(deps.procRoot ?? '/proc', String(pid), 'stat'));
    return isRunning(stat) && startTimeOf(stat) === started ? { pid, key } : undefined;
  }
  const args = forwarderCmdline(deps.procRoot ?? '/proc', pid);
  return args && argsKey(withoutLaunchArgs(args)) === key ? { pid, key } : undefined;
}

/** Every live forwarder of a container: device → pid and key (dead ones are not listed). Spawns nothing. */
export async function listForwarders(
  containerId: string,
  deps: ForwarderDeps,
): Promise<Map<string, { pid: number; key: string }>> {
  let files: string[] = [];
  const dir = proxyDirOf(deps.stateDir, containerId);
  try {
    // Most containers have no proxies dir (asked at every start): a look, not a thrown error.
    if (existsSync(dir)) files = readdirSync(dir);
  } catch {
    /* gone meanwhile: none */
  }
  const devices = files.filter((f) => f.endsWith('.pid')).map((f) => decodeURIComponent(f.slice(0, -4)));
  const found = await Promise.all(devices.map(async (d) => [d, await readForwarder(containerId, d, deps)] as const));
  return new Map(found.filter((e): e is [string, { pid: number; key: string }] => e[1] !== undefined));
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/** A unix listen socket on the host (`--listen-ns 0 --listen unix:/path`) left by a killed forwarder: removed. */
async function removeHostSocket(args: readonly string[]): Promise<void> {
  const listen = argValue(args, '--listen') ?? '';
  if (argValue(args, '--listen-ns') !== '0' || !listen.startsWith('unix:/')) return;
  const file = listen.slice('unix:'.length);
  const st = await lstat(file).catch(() => undefined);
  if (st?.isSocket()) await rm(file, { force: true });
}

/**
 * Stop a device's forwarder: SIGTERM (it removes its unix listen socket), SIGKILL after 2 s; resolves
 * once it has exited. No forwarder is success. The pid file goes.
 */
export async function stopForwarder(containerId: string, device: string, deps: ForwarderDeps): Promise<void> {
  const procRoot = deps.procRoot ?? '/proc';
  const file = pidFileOf(deps.stateDir, containerId, device);
  const live = await readForwarder(containerId, device, deps);
  if (live) {
    const kept = await readFile(argsFileOf(file), 'utf8').then(
      (t) => JSON.parse(t) as string[],
      () => undefined,
    );
    const args = kept ?? forwarderCmdline(procRoot, live.pid) ?? [];
    signal(live.pid, 'SIGTERM');
    // It exits within a millisecond of SIGTERM (a signalfd in its epoll): look again soon, then less often.
    let killed = false;
    for (let waited = 0, step = 1; !exited(procRoot, live.pid); waited += step, step = Math.min(step * 2, 50)) {
      if (waited >= 2000 && !killed) (killed = true), signal(live.pid, 'SIGKILL');
      if (waited > 5000) throw new ForwarderError(device, `the forwarder of ${device} (pid ${live.pid}) does not stop`);
      await sleep(step);
    }
    await removeHostSocket(args);
  }
  await rm(file, { force: true });
  await rm(argsFileOf(file), { force: true });
}

/** The arguments that only say how a forwarder was launched (not part of its spec's key). */
export const launchArgs = (pidFile: string, key: string) => ['--daemon', '--pid-file', pidFile, '--pid-key', key];
const withoutLaunchArgs = (args: readonly string[]) => {
  const i = args.indexOf('--daemon');
  return i < 0 ? [...args] : [...args.slice(0, i), ...args.slice(i + 5)];
};

/**
 * Start the forwarder of `spec` (the caller stopped any earlier one). Through the launcher, its child
 * sets up, writes the pid file (its pid, the spec's key, its start time) and answers `ready <pid>`.
 * Without one, through the spawn helper (a fork of a small process, not of svcd's): `svcd-proxy --daemon`
 * sets up, forks, writes the pid file with the child's pid and the key, reports `ready <pid>` and exits;
 * the child serves on in its own session. Throws a ForwarderError with the forwarder's error text
 * (nothing left behind) otherwise.
 */
export async function startForwarder(spec: ForwarderSpec, deps: ForwarderDeps): Promise<number> {
  const file = pidFileOf(deps.stateDir, spec.containerId, spec.device);
  await mkdir(path.dirname(file), { recursive: true });
  const binary = deps.binary ?? forwarderBinary();
  const timeoutMs = deps.readyTimeoutMs ?? 10_000;
  const args = [...forwarderArgs(spec), ...launchArgs(file, forwarderKey(spec))];
  let out: string;
  try {
    if (deps.launcher) {
      await writeFile(argsFileOf(file), JSON.stringify(args));
      out = await deps.launcher.launch(args, timeoutMs);
      const failed = /^error: (.*)$/m.exec(out);
      if (failed) throw new ForwarderError(spec.device, failed[1]!);
    } else out = await runCommand(binary, args, { timeoutMs });
  } catch (e) {
    await rm(file, { force: true });
    await rm(argsFileOf(file), { force: true });
    if (e instanceof ForwarderError) throw e;
    const why =
      e instanceof HostCommandError
        ? e.stderr.trim().replace(/^error: /, '') || e.message
        : e instanceof Error
          ? e.message
          : String(e);
    throw new ForwarderError(
      spec.device,
      /ENOENT|not found/i.test(why) && !(e instanceof HostCommandError && e.stderr)
        ? `cannot run ${binary}: ${why} (is it built? scripts/install-deps.sh)`
        : why,
    );
  }
  const pid = Number(/^ready (\d+)$/m.exec(out)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0)
    throw new ForwarderError(spec.device, `svcd-proxy said "${out.trim()}" instead of "ready <pid>"`);
  return pid;
}

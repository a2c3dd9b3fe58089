import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CliArgs } from '../cli-args.ts';
import { daemonSocketOf, type CliContext } from '../cli-context.ts';
import { getOverUnix, isNotListening } from '../unix-api.ts';

/** The pid of the daemon serving the socket, from its own `GET /1.0` (environment.server_pid). */
export function serverPidOf(json: unknown): number | undefined {
  const pid = (json as { metadata?: { environment?: { server_pid?: unknown } } } | undefined)?.metadata?.environment
    ?.server_pid;
  return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Whether `pid` is gone: no such process, or a zombie its parent has not reaped yet. */
function exited(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as { code?: string }).code === 'ESRCH';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; comm may hold spaces and parentheses, the state follows the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/**
 * `svcd shutdown [--timeout S]`: the host-shutdown path. Asks the daemon serving the unix socket for its
 * pid (GET /1.0), sends it SIGPWR (the daemon stops the containers by boot.stop.priority, then exits)
 * and waits until that process is gone: 0; 1 at the timeout or when it cannot be signalled. Nothing
 * listening: 0 (there is no daemon to stop).
 */
export async function shutdown(args: CliArgs, ctx: CliContext): Promise<number> {
  const socket = daemonSocketOf(ctx);
  let pid: number | undefined;
  try {
    pid = serverPidOf((await getOverUnix(socket, '/1.0', 10_000)).json);
  } catch (e) {
    if (isNotListening(e)) {
      ctx.out(`svcd is not running (nothing listens on ${socket})`);
      return 0;
    }
    ctx.err(`svcd: cannot ask the daemon on ${socket}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  if (pid === undefined) {
    ctx.err(`svcd: the daemon on ${socket} did not say its pid`);
    return 1;
  }
  try {
    process.kill(pid, 'SIGPWR');
  } catch (e) {
    if ((e as { code?: string }).code === 'ESRCH') return 0;
    ctx.err(`svcd: cannot signal the daemon (pid ${pid}): ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  const deadline = args.timeoutSec === undefined ? Infinity : Date.now() + args.timeoutSec * 1000;
  while (!exited(pid)) {
    if (Date.now() >= deadline) {
      ctx.err(`svcd: the daemon (pid ${pid}) has not exited within ${args.timeoutSec} s`);
      return 1;
    }
    await sleep(100);
  }
  return 0;
}

/**
 * svcd's forwarder launcher: one `svcd-proxy --launcher <stateDir>/proxy-launcher.sock --exit-with <svcd>`
 * per svcd process, started (through the spawn helper) at the first launch and again if it died. A launch
 * is the forwarder's arguments written to its socket; the launcher forks, and the child is the forwarder
 * (no node spawn, no exec): its answer, `ready <pid>` or `error: <reason>`, is read up to EOF. It exits
 * with svcd; the forwarders it launched do not (src/host/native/svcd-proxy.c).
 */
import { createConnection } from 'node:net';
import path from 'node:path';
import { runCommand } from '../exec.ts';

/** sun_path's size (with its terminating NUL). */
const SUN_PATH_MAX = 108;

export interface ForwarderLauncher {
  /** svcd-proxy's output for these arguments (as a spawn would print it). */
  launch(args: readonly string[], timeoutMs: number): Promise<string>;
}

export interface LauncherDeps {
  stateDir: string;
  binary: string;
  /** The process the launcher exits with (default: this one). */
  exitWith?: number;
  /** How the launcher is started (default: the spawn helper). */
  run?: (file: string, args: readonly string[], opts: { timeoutMs: number }) => Promise<string>;
}

/** Where the launcher listens, or undefined when the path is too long for a unix socket (then forwarders are spawned). */
export function launcherSocketOf(stateDir: string): string | undefined {
  const sock = path.join(stateDir, 'proxy-launcher.sock');
  return Buffer.byteLength(sock) < SUN_PATH_MAX ? sock : undefined;
}

const isUnreachable = (e: unknown) => ['ENOENT', 'ECONNREFUSED'].includes((e as NodeJS.ErrnoException).code ?? '');

/** One request on the socket: the arguments, NUL-terminated; the answer up to EOF. */
function request(sock: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = createConnection(sock, () => s.end(Buffer.from(args.map((a) => `${a}\0`).join(''))));
    s.setEncoding('utf8');
    s.setTimeout(timeoutMs, () => s.destroy(new Error(`no answer from the forwarder launcher within ${timeoutMs} ms`)));
    s.on('data', (d: string) => (out += d));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

export function createForwarderLauncher(deps: LauncherDeps): ForwarderLauncher | undefined {
  const sock = launcherSocketOf(deps.stateDir);
  if (!sock) return undefined;
  const run = deps.run ?? ((file, args, opts) => runCommand(file, args, opts));
  let up: Promise<void> | undefined;
  const start = () =>
    (up ??= run(deps.binary, ['--launcher', sock, '--exit-with', String(deps.exitWith ?? process.pid)], {
      timeoutMs: 10_000,
    }).then(
      () => undefined,
      (e: unknown) => {
        up = undefined;
        throw e;
      },
    ));
  return {
    async launch(args, timeoutMs) {
      await start();
      try {
        return await request(sock, args, timeoutMs);
      } catch (e) {
        // It died (or its socket went): once more with a new one.
        if (!isUnreachable(e)) throw e;
        up = undefined;
        await start();
        return request(sock, args, timeoutMs);
      }
    },
  };
}

/**
 * Long-running host processes fed and read by svcd (exec's lxc-attach, the console's PTY, lxc-console): started
 * in the spawn helper (no fork of svcd itself), argv arrays, never shell strings. The one-shot and streamed
 * runners are exec.ts.
 */
import {
  type ProcessExit,
  type PtyProcess,
  spawnPtyStreamed,
  spawnStreamed,
  type StdioTarget,
  type StreamedProcess as SpawnedProcess,
} from './spawn/spawn-helper.ts';

/** SIGTERM, then SIGKILL after `graceMs` if it has not exited by then. */
export function terminate(p: SpawnedProcess, graceMs: number): void {
  p.kill('SIGTERM');
  const force = setTimeout(() => p.kill('SIGKILL'), graceMs);
  void p.exited.then(() => clearTimeout(force));
}

export type { ProcessExit, PtyProcess, StdioTarget, SpawnedProcess };

/** The child gets no part of svcd's environment (lxc-attach clears it inside anyway). */
const childEnv = () => ({ PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' });

/**
 * Start a long-running host command (argv array, never a shell string) with each standard stream a
 * pipe, the null device or appended to a file; nothing is buffered (the caller streams the pipes), no
 * timeout. For `lxc-attach` under exec. It runs in the spawn helper (no fork of svcd itself).
 */
export function spawnProcess(
  file: string,
  args: readonly string[],
  opts: { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget; cwd?: string; copyIn?: string },
): Promise<SpawnedProcess> {
  return spawnStreamed(file, args, { ...opts, env: childEnv() });
}

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows`; raw bytes, no decoding. In the spawn helper. */
export function spawnPty(
  file: string,
  args: readonly string[],
  opts: { cols: number; rows: number; cwd?: string; copyIn?: string },
): Promise<PtyProcess> {
  return spawnPtyStreamed(file, args, { ...opts, cwd: opts.cwd ?? '/', env: childEnv() });
}

/** A long-running command fed and read as raw bytes (`lxc-console`). */
export interface InteractiveCommand {
  /** Bytes the command wrote to its standard output. */
  onData(listener: (data: Buffer) => void): void;
  /** Called once when the command has exited; `stderr` is the tail of its standard error. */
  onExit(listener: (exit: { exitCode: number | undefined; stderr: string }) => void): void;
  write(data: Buffer): void;
  /** SIGTERM, then SIGKILL after 2 s if it is still there. */
  kill(): void;
}

/**
 * Run a host command with piped standard input and output (argv array, never a shell string);
 * bytes pass unchanged both ways. Standard error is kept (its last 4 KiB) for the exit report.
 */
export function spawnInteractiveCommand(file: string, args: readonly string[]): InteractiveCommand {
  // In the spawn helper (no fork of svcd itself); writes before it runs wait for it.
  const started = spawnStreamed(file, args, { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', env: childEnv() });
  let stderr = '';
  let killed = false;
  void started.then(
    (p) => {
      p.stderr!.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString('utf8')).slice(-4096);
      });
      p.stdin!.on('error', () => {});
      if (killed) p.kill('SIGTERM');
    },
    () => {},
  );
  const exited = started.then(
    async (p) => {
      // stderr's last bytes may come after the exit: the report waits for both
      const stderrEnded = new Promise<void>((resolve) => {
        if (p.stderr!.readableEnded) resolve();
        p.stderr!.once('end', resolve).once('close', resolve);
      });
      const e = await p.exited;
      await Promise.race([stderrEnded, new Promise((r) => setTimeout(r, 1_000))]);
      return { exitCode: e.exitCode, stderr: stderr.trim() };
    },
    (e: unknown) => ({ exitCode: undefined, stderr: e instanceof Error ? e.message : String(e) }),
  );
  return {
    onData: (l) =>
      void started.then(
        (p) => p.stdout!.on('data', (d: Buffer) => l(d)),
        () => {},
      ),
    onExit: (l) => void exited.then(l),
    write: (d) => {
      void started.then(
        (p) => {
          if (p.stdin!.writable) p.stdin!.write(d);
        },
        () => {},
      );
    },
    kill: () => {
      killed = true;
      void started.then(
        (p) => terminate(p, 2_000),
        () => {},
      );
    },
  };
}

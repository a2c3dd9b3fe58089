/**
 * svcd's one spawn helper (helper-connection.ts, protocol.ts, frames.ts, src/host/native/svcd-spawn.c) and what runs in
 * it: buffered commands (runInHelper), and streamed processes with pipes (spawn-streamed.ts) or a
 * PTY (spawn-pty.ts). One helper process serves the whole svcd process, started on first use.
 */
import { createHelperConnection, type HelperRun } from './helper-connection.ts';
import type { HelperResult, StdioTarget } from './protocol.ts';
import { spawnPty, type PtyProcess } from './spawn-pty.ts';
import { spawnStreamed as spawnStreamedIn, type StreamedProcess, type StreamOptions } from './spawn-streamed.ts';

export type { HelperRun } from './helper-connection.ts';
export type { ProcessExit } from './process-exit.ts';
export type { HelperResult, StdioTarget } from './protocol.ts';
export type { PtyProcess } from './spawn-pty.ts';
export type { StreamedProcess } from './spawn-streamed.ts';

const connection = createHelperConnection();

/** Run one command in the helper; resolves with execa-like result fields (never rejects). */
export const runInHelper = (r: HelperRun): Promise<HelperResult> => connection.run(r);

/** Stop the helper (tests, daemon stop); the next command starts a new one. */
export const stopSpawnHelper = (): void => connection.stop();

/**
 * Start a long-running host command (argv array, never a shell string) in the helper, each standard
 * stream a pipe (relayed with backpressure), the null device or appended to a file. No timeout.
 */
export const spawnStreamed = (
  file: string,
  args: readonly string[],
  opts: StreamOptions & { stdin: StdioTarget; stdout: StdioTarget; stderr: StdioTarget },
): Promise<StreamedProcess> => spawnStreamedIn(connection, file, args, opts);

/** Start `file args` (argv array) as the session leader of a new PTY of `cols`×`rows` in the helper; raw bytes. */
export const spawnPtyStreamed = (
  file: string,
  args: readonly string[],
  opts: StreamOptions & { cols: number; rows: number },
): Promise<PtyProcess> => spawnPty(connection, file, args, opts);

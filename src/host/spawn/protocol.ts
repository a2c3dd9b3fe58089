/**
 * The spawn helper's messages: every message svcd (the parent, helper-connection.ts) and the helper
 * process (src/host/native/svcd-spawn.c) send each other, as frames.ts encodes them on the socket
 * between them. Each message carries the `id` that the parent gave the command or process it is about.
 */

/**
 * A standard stream of a streamed process: a pipe, the null device, appended to a file (an existing one, never
 * through a symlink), or a connection to a unix socket svcd listens on (streams naming one socket share one
 * connection): a bulk stream then bypasses the helper.
 */
export type StdioTarget = 'pipe' | 'ignore' | { appendTo: string } | { socket: string };

// --- parent → helper ------------------------------------------------------------------------

/** Run a command to its end, its output buffered; answered by one `result`. */
export interface RunMessage {
  type: 'run';
  id: number;
  file: string;
  args: string[];
  /** Killed (SIGTERM, then SIGKILL) after this long; 0 = no limit. */
  timeoutMs: number;
  /** The command's stdin (then closed); without it, the null device. */
  input?: string | Uint8Array | undefined;
  env?: Record<string, string> | undefined;
  /** false: the command gets only `env`, not the helper's environment. */
  extendEnv: boolean;
  uid?: number | undefined;
  gid?: number | undefined;
}

/** Cancel a `run`: it is killed and its result says `isCanceled`. */
export interface CancelMessage {
  type: 'cancel';
  id: number;
}

/** Start a streamed process (exec, console): its pipes (`stdio`) or a PTY of `pty` size; answered by `spawned` or `spawn-error`. */
export interface SpawnMessage {
  type: 'spawn';
  id: number;
  file: string;
  args: string[];
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  /** Run `file` from the helper's private copy of it, made in this root-only directory (see private_copy in svcd-spawn.c). */
  copyIn?: string | undefined;
  /** stdin, stdout, stderr (pipes); absent with `pty`. */
  stdio?: [StdioTarget, StdioTarget, StdioTarget] | undefined;
  pty?: { cols: number; rows: number } | undefined;
}

/** Bytes for the process's stdin (or its terminal); acknowledged by `stdin-ack` with the same `seq`. */
export interface StdinMessage {
  type: 'stdin';
  id: number;
  seq: number;
  data: Uint8Array;
}

/** Close the process's stdin. */
export interface StdinEndMessage {
  type: 'stdin-end';
  id: number;
}

/** Flow control: stop or go on reading the process's stdout (1) or stderr (2). */
export interface FlowMessage {
  type: 'pause' | 'resume';
  id: number;
  fd: number;
}

/** Send the process a signal. */
export interface KillMessage {
  type: 'kill';
  id: number;
  signal: NodeJS.Signals;
}

/** Resize the process's terminal. */
export interface ResizeMessage {
  type: 'resize';
  id: number;
  cols: number;
  rows: number;
}

/** The messages a streamed process gets once started. */
export type StreamControlMessage = StdinMessage | StdinEndMessage | FlowMessage | KillMessage | ResizeMessage;

/** Every message the parent sends the helper. */
export type ParentMessage = RunMessage | CancelMessage | SpawnMessage | StreamControlMessage;

// --- helper → parent ------------------------------------------------------------------------

/** How a buffered command ended, as execa would say it (one final newline stripped from each output). */
export interface HelperResult {
  failed: boolean;
  stdout: string;
  stderr: string;
  exitCode?: number | undefined;
  timedOut: boolean;
  isCanceled: boolean;
  shortMessage?: string | undefined;
}

/** The end of a `run`. */
export type ResultMessage = { type: 'result'; id: number } & HelperResult;

/** What the helper says about a streamed process: started (with its pid) or not, its output, acks, its exit. */
export type StreamMessage =
  | { type: 'spawned'; id: number; pid: number }
  | { type: 'spawn-error'; id: number; message: string }
  | { type: 'data'; id: number; fd: number; data: Uint8Array }
  | { type: 'eof'; id: number; fd: number }
  | { type: 'stdin-ack'; id: number; seq: number }
  /** Its exit code, or the name of the signal that killed it. */
  | { type: 'exit'; id: number; exitCode: number | null; signal: string | null };

/** Every message the helper sends the parent. */
export type HelperMessage = ResultMessage | StreamMessage;

/** A message as its sender writes it, before the connection adds the `id`. */
export type WithoutId<M> = M extends unknown ? Omit<M, 'id'> : never;

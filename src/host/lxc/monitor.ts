/**
 * The LXC state stream for a stream observer: `lxc-monitor -P <lxcPath> -n <regex>` prints one line per
 * state change of every matching container. lxc-monitor spawns (or joins) an `lxc-monitord` for the
 * LXC path, which exits on its own a while after its last client leaves. Events that happen before
 * lxc-monitor has connected are not replayed: pair the stream with a periodic `containerState` poll.
 */
import { isLxcState, lxcArgs, type LxcState } from './lxc-args.ts';
import { streamCommand } from '../exec.ts';

export type LxcMonitorEvent =
  | { type: 'state'; name: string; state: LxcState }
  | { type: 'exit'; name: string; status: number };

/**
 * Parse one lxc-monitor line: `'c1' changed state to [RUNNING]` or `'c1' exited with status [0]`;
 * undefined for anything else (lxc-monitor's own diagnostics, unknown states).
 */
export function parseMonitorLine(line: string): LxcMonitorEvent | undefined {
  const state = /^'(.+)' changed state to \[([A-Z]+)\]$/.exec(line.trim());
  if (state) return isLxcState(state[2]!) ? { type: 'state', name: state[1]!, state: state[2]! } : undefined;
  const exit = /^'(.+)' exited with status \[(-?\d+)\]$/.exec(line.trim());
  if (exit) return { type: 'exit', name: exit[1]!, status: Number(exit[2]) };
  return undefined;
}

export interface WatchStatesInput {
  lxcPath: string;
  /** Containers to watch: a POSIX extended regex on the name (default every one). */
  namePattern?: string;
  /** Abort to stop watching; the promise then resolves. */
  signal: AbortSignal;
  onEvent: (event: LxcMonitorEvent) => void;
}

/** Run lxc-monitor and report every event until it exits (rejects if it fails) or `signal` aborts (resolves). */
export async function watchStates(input: WatchStatesInput): Promise<void> {
  await streamCommand('lxc-monitor', lxcArgs.monitor(input.lxcPath, input.namePattern), {
    signal: input.signal,
    onLine: (line) => {
      const ev = parseMonitorLine(line);
      if (ev) input.onEvent(ev);
    },
  });
}

import type { StreamEvent } from './helper-connection.ts';

/** How a process ended: its exit code, or the name of the signal that killed it. */
export interface ProcessExit {
  exitCode?: number;
  signal?: string;
}

/** The end of a streamed process that this message tells of (a lost helper killed it), if it does. */
export function processExit(m: StreamEvent): ProcessExit | undefined {
  if (m.type === 'lost') return { signal: 'SIGKILL' };
  if (m.type !== 'exit') return undefined;
  return m.signal ? { signal: m.signal } : { exitCode: m.exitCode ?? 1 };
}

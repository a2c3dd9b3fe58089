import type { RuntimeLogger } from './types.ts';

/** Test support: a RuntimeLogger that records every call. */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogEntry {
  level: LogLevel;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

export interface TestLogger extends RuntimeLogger {
  readonly entries: LogEntry[];
  /** Entries of a level, optionally only those whose message contains `text`. */
  at(level: LogLevel, text?: string): LogEntry[];
}

export function createTestLogger(): TestLogger {
  const entries: LogEntry[] = [];
  const make = (bindings: object): RuntimeLogger => {
    const write = (level: LogLevel) => (obj: object, msg?: string) => {
      entries.push({ level, obj: { ...bindings, ...obj }, msg });
    };
    return {
      debug: write('debug'),
      info: write('info'),
      warn: write('warn'),
      error: write('error'),
      child: (b) => make({ ...bindings, ...b }),
    };
  };
  return {
    ...make({}),
    entries,
    at: (level, text) =>
      entries.filter((e) => e.level === level && (text === undefined || (e.msg ?? '').includes(text))),
  };
}

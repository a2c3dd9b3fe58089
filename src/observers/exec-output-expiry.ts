import type { ExpiryFilesAdapter } from './adapters.ts';
import type { PollObserver } from './types.ts';
import { logsRootOf } from '../host/layout.ts';

/** How long recorded exec output is kept (the spec: like other log files, typically 48 hours). */
export const EXEC_OUTPUT_RETENTION_MS = 48 * 60 * 60 * 1000;

/** Recorded exec output older than `maxAgeMs` is removed (hourly by default; host/exec-output-files.ts). */
export function createExecOutputExpiryObserver(deps: {
  stateDir: string;
  files: Pick<ExpiryFilesAdapter, 'removeOldExecOutput'>;
  now?: () => number;
  intervalMs?: number;
  maxAgeMs?: number;
}): PollObserver {
  return {
    name: 'exec-output-expiry',
    kind: 'poll',
    intervalMs: deps.intervalMs ?? 60 * 60_000,
    async sample() {
      await deps.files.removeOldExecOutput(
        logsRootOf(deps.stateDir),
        deps.now?.() ?? Date.now(),
        deps.maxAgeMs ?? EXEC_OUTPUT_RETENTION_MS,
      );
    },
  };
}

import os from 'node:os';
import { loadDaemonConfig } from '../config/daemon-config.ts';
import { unixSocketOf } from '../host/layout.ts';

/** What a verb may use of its process: the environment and two output lines writers. */
export interface CliContext {
  env: NodeJS.ProcessEnv;
  out(line: string): void;
  err(line: string): void;
  /** All of stdin as text (`svcd apply -f -`, `svcd init --preseed`); absent where there is none. */
  readStdin?(): Promise<string>;
}

/** The daemon's unix socket as the daemon itself derives it from the environment (SVCD_DIR, validated). */
export function daemonSocketOf(ctx: Pick<CliContext, 'env'>): string {
  return unixSocketOf(loadDaemonConfig(ctx.env, os.hostname()).stateDir);
}

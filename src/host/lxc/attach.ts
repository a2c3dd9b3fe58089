import { runCommand } from '../exec.ts';
import { lxcArgs, type LxcRef } from './lxc-args.ts';

export interface RunInContainerInput extends LxcRef {
  command: readonly string[];
  /** The command's whole environment (lxc-attach --clear-env); default a PATH only. */
  env?: Readonly<Record<string, string>>;
  input?: string | Buffer;
  signal?: AbortSignal;
  timeoutMs?: number;
}

const DEFAULT_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

/** Run a command inside a running container (`lxc-attach`); resolves with its stdout, rejects with HostCommandError. */
export async function runInContainer(i: RunInContainerInput): Promise<string> {
  return runCommand('lxc-attach', lxcArgs.attach(i, i.command, i.env ?? DEFAULT_ENV), { signal: i.signal, timeoutMs: i.timeoutMs ?? 60_000, input: i.input });
}

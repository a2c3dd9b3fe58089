import { notifyArgs, type NotifyState } from './notify-message.ts';
import { inPackage } from '../../util/package-root.ts';

/** The helper binary: `.build/svcd-notify` at the top of the checkout (SVCD_NOTIFY overrides it, for packagers). */
export function notifyHelperPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVCD_NOTIFY ?? inPackage('.build/svcd-notify');
}

export interface SdNotifyDeps {
  /** $NOTIFY_SOCKET as systemd set it; unset (not under a Type=notify unit): nothing is sent. */
  socket: string | undefined;
  /** The daemon's pid: the credentials of every message carry it. */
  pid: number;
  helper: string;
  /** Runs a host command (src/host/exec.ts runCommand: in the spawn helper). */
  run: (file: string, args: readonly string[], opts: { timeoutMs: number }) => Promise<unknown>;
  log: { warn(obj: object, msg: string): void };
}

export interface SdNotify {
  /** Tell systemd the state; never rejects (a failure is logged: the daemon runs on without it). */
  send(state: NotifyState): Promise<void>;
}

/** sd_notify through the C helper (node cannot send unix datagrams). */
export function createSdNotify(deps: SdNotifyDeps): SdNotify {
  return {
    async send(state) {
      if (!deps.socket) return;
      try {
        await deps.run(deps.helper, notifyArgs(deps.socket, deps.pid, state), { timeoutMs: 5_000 });
      } catch (err) {
        deps.log.warn({ err, state }, 'sd_notify failed');
      }
    },
  };
}

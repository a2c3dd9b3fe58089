/**
 * What svcd tells systemd (sd_notify) and the argv of the helper that sends it
 * (src/host/native/svcd-notify.c, built into .build/ by scripts/install-deps.sh).
 */
export type NotifyState = 'ready' | 'stopping';

/** The sd_notify message for a state: READY=1 names the main pid (MAINPID), STOPPING=1 alone. */
export function notifyMessage(state: NotifyState, pid: number): string {
  return state === 'ready' ? `READY=1\nMAINPID=${pid}` : 'STOPPING=1';
}

/**
 * The helper's argv after its path: the notify socket ($NOTIFY_SOCKET: a path or '@abstract'), the pid
 * the credentials carry (the daemon's), the message. Throws on a socket systemd would never give.
 */
export function notifyArgs(socket: string, pid: number, state: NotifyState): string[] {
  if (!/^[/@]/.test(socket) || Buffer.byteLength(socket) >= 108)
    throw new Error(`NOTIFY_SOCKET is not a unix socket address: ${socket}`);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`not a pid: ${pid}`);
  return [socket, String(pid), notifyMessage(state, pid)];
}

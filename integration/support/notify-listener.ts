import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './http.ts';

/** One sd_notify datagram as received, with the credentials the kernel gave it. */
export interface NotifyMessage {
  pid: number;
  uid: number;
  gid: number;
  message: string;
}

export interface NotifyListener {
  socketPath: string;
  messages: NotifyMessage[];
  /** The first message (after `from` ones) that `match` accepts, waited for. */
  next(match: (m: NotifyMessage) => boolean, from?: number, timeoutMs?: number): Promise<NotifyMessage>;
  close(): void;
}

/** systemd's notify socket, played by python3 (node cannot receive unix datagrams): notify-listener.py. */
export async function listenNotify(socketPath: string): Promise<NotifyListener> {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'notify-listener.py');
  const proc: ChildProcess = spawn('python3', [script, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: NotifyMessage[] = [];
  let listening = false;
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const obj = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if ('listening' in obj) listening = true;
      else messages.push(obj as NotifyMessage);
    }
  });
  await eventually(() => listening || proc.exitCode !== null, 'the notify listener to bind');
  if (!listening) throw new Error(`notify-listener.py exited with ${proc.exitCode}`);
  return {
    socketPath,
    messages,
    next: (match, from = 0, timeoutMs = 30_000) =>
      eventually(() => messages.slice(from).find(match), 'an sd_notify message', timeoutMs),
    close: () => void proc.kill('SIGTERM'),
  };
}

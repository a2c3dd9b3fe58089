/**
 * One `exec` with wait-for-websocket over the unix socket, as `lxc exec` does it: POST, connect
 * the control socket and every fd socket, send stdin EOF (an empty text frame), wait for the
 * operation to end and for the output sockets to be closed by the server.
 */
import { WebSocket } from 'ws';
import { errorText, type OperationResult, type UnixClient } from './unix-client.ts';

function connect(socketPath: string, opUrl: string, secret: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws+unix://${socketPath}:${opUrl}/websocket?secret=${encodeURIComponent(secret)}`);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`websocket refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

export async function execOverWebsockets(
  client: UnixClient,
  name: string,
  command: string[],
  timeoutMs: number,
): Promise<OperationResult> {
  const started = performance.now();
  let status = 0;
  const sockets: WebSocket[] = [];
  try {
    const r = await client.request('POST', `/1.0/containers/${name}/exec`, {
      command,
      environment: {},
      'wait-for-websocket': true,
      interactive: false,
    });
    status = r.status;
    const opUrl: unknown = r.json?.operation;
    const fds: Record<string, string> | undefined = r.json?.metadata?.metadata?.fds;
    if (r.status !== 202 || typeof opUrl !== 'string' || !fds)
      return { ok: false, status, error: `HTTP ${r.status}: ${errorText(r)}`, ms: performance.now() - started };
    const closed: Promise<void>[] = [];
    for (const fd of [
      'control',
      ...Object.keys(fds)
        .filter((k) => k !== 'control')
        .sort(),
    ]) {
      const ws = await connect(client.socketPath, opUrl, fds[fd]!);
      ws.on('error', () => {});
      sockets.push(ws);
      if (fd === '1' || fd === '2') closed.push(new Promise((resolve) => ws.once('close', () => resolve())));
      if (fd === '0') ws.send('', { binary: false });
    }
    const op = await client.waitOperation(opUrl, Date.now() + timeoutMs);
    await Promise.all(closed);
    const ok = Number(op?.status_code) === 200;
    return {
      ok,
      op,
      status,
      ...(ok ? {} : { error: `operation ${op?.status ?? '?'}: ${op?.err || '(no error text)'}` }),
      ms: performance.now() - started,
    };
  } catch (e) {
    return { ok: false, status, error: e instanceof Error ? e.message : String(e), ms: performance.now() - started };
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}

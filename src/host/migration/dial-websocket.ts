import { WebSocket } from 'ws';
import { pinnedTls } from '../images/remote/remote-https.ts';

/** LXD's dialer gives a migration peer 5 s for the websocket handshake. */
const HANDSHAKE_MS = 5_000;

/**
 * The websocket of one channel of another server's migration operation, as LXD dials it: the
 * operation's https URL turned into `wss://…/websocket?secret=…`, authorised by the secret alone,
 * and the peer pinned to the certificate the request carried (when it carried one).
 */
export async function dialMigrationSocket(
  operationUrl: string,
  secret: string,
  certificate: string | undefined,
  signal: AbortSignal,
): Promise<WebSocket> {
  let url: URL;
  try {
    url = new URL(operationUrl);
  } catch {
    throw new Error(`Invalid migration operation URL "${operationUrl}"`);
  }
  if (url.protocol !== 'https:') throw new Error(`The migration operation URL must be https: "${operationUrl}"`);
  url.protocol = 'wss:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/websocket`;
  url.search = new URLSearchParams({ secret }).toString();
  const ws = new WebSocket(url, {
    handshakeTimeout: HANDSHAKE_MS,
    maxPayload: 64 * 1024 * 1024,
    perMessageDeflate: false,
    // no pin given: the system's CA roots and the host name decide, as for LXD
    ...(certificate ? pinnedTls(certificate) : {}),
  });
  return new Promise((resolve, reject) => {
    const abort = () => ws.terminate();
    signal.addEventListener('abort', abort, { once: true });
    ws.once('open', () => {
      signal.removeEventListener('abort', abort);
      resolve(ws);
    });
    ws.once('unexpected-response', (_req, res) => {
      signal.removeEventListener('abort', abort);
      ws.terminate();
      reject(new Error(`The migration peer refused the websocket (${res.statusCode ?? '?'}): ${url.host}`));
    });
    ws.once('error', (e) => {
      signal.removeEventListener('abort', abort);
      reject(new Error(`Failed to connect to the migration peer ${url.host}: ${e.message}`));
    });
  });
}

import WebSocket from 'ws';

/** Subscribe to /1.0/events over the unix socket; `events` fills as they arrive. */
export async function subscribeEvents(
  socketPath: string,
  query = '',
): Promise<{ events: any[]; ws: WebSocket; close(): void }> {
  const ws = new WebSocket(`ws+unix://${socketPath}:/1.0/events${query}`);
  const events: any[] = [];
  ws.on('message', (d) => events.push(JSON.parse(d.toString())));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return { events, ws, close: () => ws.close() };
}

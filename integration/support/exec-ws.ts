import { WebSocket } from 'ws';
import type { Client } from './http.ts';

/** One operation websocket over the daemon's unix socket (`ws+unix://<socket>:<path>`). */
export function openOperationSocket(socketPath: string, operation: string, secret: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws+unix://${socketPath}:${operation}/websocket?secret=${encodeURIComponent(secret)}`);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error(`websocket refused: HTTP ${res.statusCode}`), { status: res.statusCode })),
    );
    ws.once('error', reject);
  });
}

/** What a socket received: binary data, how many empty text frames (EOF), and whether it closed. */
export interface Received {
  data: Buffer;
  eofs: number;
  /** Non-empty text frames (the server must never send output as text). */
  texts: string[];
  closed: Promise<number>;
}

export function collect(ws: WebSocket): Received {
  const chunks: Buffer[] = [];
  const r: Received = {
    data: Buffer.alloc(0),
    eofs: 0,
    texts: [],
    closed: new Promise((resolve) => ws.once('close', (code) => resolve(code))),
  };
  ws.on('message', (d, binary) => {
    const buf = Buffer.isBuffer(d) ? d : Array.isArray(d) ? Buffer.concat(d) : Buffer.from(d);
    if (!binary) {
      if (buf.length === 0) r.eofs++;
      else r.texts.push(buf.toString('utf8'));
      return;
    }
    chunks.push(buf);
    r.data = Buffer.concat(chunks);
  });
  return r;
}

export interface ExecSession {
  operation: string;
  fds: Record<string, string>;
  sockets: Record<string, WebSocket>;
  received: Record<string, Received>;
  /** Send stdin bytes (binary frame) on fd 0. */
  write(data: Buffer | string): void;
  /** Stdin EOF: an empty text frame on fd 0. */
  eof(): void;
  control(msg: unknown): void;
  /** Wait for the operation to end; returns its final object. */
  done(): Promise<any>;
}

/**
 * `POST /1.0/containers/<name>/exec` with wait-for-websocket and connect every fd socket (control
 * first, as the lxc CLI does, unless `connect` lists which ones).
 */
export async function execWithSockets(
  api: Client,
  socketPath: string,
  name: string,
  body: Record<string, unknown>,
  connect?: string[],
): Promise<ExecSession> {
  const res = await api.post(`/1.0/containers/${name}/exec`, { 'wait-for-websocket': true, ...body });
  if (res.status !== 202) throw new Error(`exec refused: ${res.status} ${res.text}`);
  const operation: string = res.json.operation;
  const fds: Record<string, string> = res.json.metadata.metadata.fds;
  const order = connect ?? [
    'control',
    ...Object.keys(fds)
      .filter((k) => k !== 'control')
      .sort(),
  ];
  const sockets: Record<string, WebSocket> = {};
  const received: Record<string, Received> = {};
  for (const fd of order) {
    sockets[fd] = await openOperationSocket(socketPath, operation, fds[fd]!);
    received[fd] = collect(sockets[fd]);
  }
  return {
    operation,
    fds,
    sockets,
    received,
    write: (data) => sockets['0']!.send(Buffer.from(data), { binary: true }),
    eof: () => sockets['0']!.send('', { binary: false }),
    control: (msg) => sockets.control!.send(JSON.stringify(msg), { binary: false }),
    done: async () => (await api.get(`${operation}/wait?timeout=60`)).json.metadata,
  };
}

import http from 'node:http';
import https from 'node:https';

export interface Target {
  socketPath?: string;
  /** For HTTPS: host:port plus an optional client certificate. */
  https?: { host: string; port: number; cert?: string; key?: string };
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The raw body bytes (binary downloads); set by `request`. */
  body?: Buffer;
  /** Parsed JSON body (undefined when not JSON). */
  json: any;
}

/** One HTTP request over the unix socket or HTTPS (server certificate not verified: it is self-signed). */
export function request(
  target: Target,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const payload =
    body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const opts: https.RequestOptions = {
    method,
    path,
    headers: { ...(payload !== undefined ? { 'Content-Length': String(Buffer.byteLength(payload)) } : {}), ...headers },
    ...(target.socketPath
      ? { socketPath: target.socketPath }
      : {
          host: target.https!.host,
          port: target.https!.port,
          cert: target.https!.cert,
          key: target.https!.key,
          rejectUnauthorized: false,
          agent: false,
        }),
  };
  return new Promise((resolve, reject) => {
    const req = (target.socketPath ? http : https).request(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = body.toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Bind a target: `api.get('/1.0')`, `api.post('/1.0/profiles', {...})`. */
export function client(target: Target) {
  const call = (method: string) => (path: string, body?: unknown, headers?: Record<string, string>) =>
    request(target, method, path, body, headers);
  return {
    get: call('GET'),
    post: call('POST'),
    put: call('PUT'),
    patch: call('PATCH'),
    delete: call('DELETE'),
    request: (m: string, p: string, b?: unknown, h?: Record<string, string>) => request(target, m, p, b, h),
  };
}
export type Client = ReturnType<typeof client>;

/** Poll until `check` returns a truthy value (bounded; no fixed sleeps in tests). */
export async function eventually<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Assert the spec's error envelope and return its message. */
export function expectError(res: Reply, status: number): string {
  if (
    res.status !== status ||
    res.json?.type !== 'error' ||
    res.json?.error_code !== status ||
    typeof res.json?.error !== 'string'
  )
    throw new Error(`expected error envelope ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json.error as string;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (for the HTTPS listener under test). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as import('node:net').AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * A small HTTP client for an LXD-style API on a unix socket, with keep-alive connections (a
 * node:http Agent; every request names the socket path), and async-operation waiting through
 * `GET /1.0/operations/<id>/wait`. Only the unix socket is ever contacted.
 */
import http from 'node:http';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** Parsed JSON body, undefined when the body is not JSON. */
  json: any;
  /** Wall time of the request, milliseconds. */
  ms: number;
}

export interface OperationResult {
  ok: boolean;
  /** Final operation object (metadata of the wait reply), when there is one. */
  op?: any;
  /** HTTP status of the request that started the operation. */
  status: number;
  /** Why it failed (error envelope, operation `err`, or transport error). */
  error?: string;
  /** From sending the request to the operation's final state, milliseconds. */
  ms: number;
}

export class UnixClient {
  readonly agent: http.Agent;

  constructor(
    readonly socketPath: string,
    /** Per-request socket timeout (waits pass their own, longer one). */
    readonly timeoutMs = 120_000,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64 });
  }

  /** Requests sent again because a kept-alive connection was closed by the server as it was reused. */
  retries = 0;

  request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    timeoutMs = this.timeoutMs,
  ): Promise<Reply> {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    const started = performance.now();
    return this.attempt(method, path, body, payload, headers, timeoutMs, started, true);
  }

  private attempt(
    method: string,
    path: string,
    body: unknown,
    payload: Buffer | undefined,
    headers: Record<string, string>,
    timeoutMs: number,
    started: number,
    mayRetry: boolean,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          socketPath: this.socketPath,
          agent: this.agent,
          method,
          path,
          headers: {
            Host: 'localhost',
            ...(payload !== undefined ? { 'Content-Length': String(payload.length) } : {}),
            ...(payload !== undefined && !Buffer.isBuffer(body) ? { 'Content-Type': 'application/json' } : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: performance.now() - started });
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        // The server closed an idle kept-alive connection just as it was picked for this request:
        // the request never reached it, so it is sent once more on a fresh connection (the
        // documented pattern for http.Agent keep-alive races).
        if (mayRetry && req.reusedSocket && (err.code === 'ECONNRESET' || err.message === 'socket hang up')) {
          this.retries++;
          this.attempt(method, path, body, payload, headers, timeoutMs, started, false).then(resolve, reject);
          return;
        }
        reject(err);
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${path}`)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  get(path: string): Promise<Reply> {
    return this.request('GET', path);
  }

  /**
   * Wait for an operation to reach a final state (`/wait?timeout=`, repeated until the deadline).
   * Resolves with the final operation object.
   */
  async waitOperation(opUrl: string, deadlineMs: number): Promise<any> {
    for (;;) {
      const left = deadlineMs - Date.now();
      if (left <= 0) throw new Error(`operation ${opUrl} did not finish in time`);
      const seconds = Math.max(1, Math.min(60, Math.ceil(left / 1000)));
      const r = await this.request('GET', `${opUrl}/wait?timeout=${seconds}`, undefined, {}, (seconds + 30) * 1000);
      if (r.status !== 200) throw new Error(`wait ${opUrl}: HTTP ${r.status} ${errorText(r)}`);
      const op = r.json?.metadata;
      const code = Number(op?.status_code);
      if (code >= 200) return op;
    }
  }

  /**
   * Run one async request to completion: send it, expect 202 + an operation, wait for it.
   * Never throws: failures are reported in the result.
   */
  async operation(method: string, path: string, body: unknown, timeoutMs: number): Promise<OperationResult> {
    const started = performance.now();
    const deadline = Date.now() + timeoutMs;
    let status = 0;
    try {
      const r = await this.request(method, path, body);
      status = r.status;
      const opUrl: unknown = r.json?.operation || r.headers.location;
      if (r.status !== 202 || typeof opUrl !== 'string' || !opUrl) {
        return { ok: false, status, error: `HTTP ${r.status}: ${errorText(r)}`, ms: performance.now() - started };
      }
      const op = await this.waitOperation(opUrl, deadline);
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
    }
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The error text of an error envelope (or the start of the body). */
export function errorText(r: Reply): string {
  if (r.json && typeof r.json.error === 'string' && r.json.error) return r.json.error;
  return r.text.slice(0, 200).trim() || '(empty body)';
}

import http from 'node:http';

/** A JSON answer of the daemon's API. */
export interface ApiAnswer {
  status: number;
  json: unknown;
}

/** GET `path` over the daemon's unix socket; rejects when nothing answers (ENOENT, ECONNREFUSED) or after `timeoutMs`. */
export function getOverUnix(socketPath: string, path: string, timeoutMs = 5_000): Promise<ApiAnswer> {
  return requestOverUnix(socketPath, 'GET', path, timeoutMs);
}

/** A body-less request over the daemon's unix socket (as getOverUnix). */
export function requestOverUnix(
  socketPath: string,
  method: string,
  path: string,
  timeoutMs = 5_000,
): Promise<ApiAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath, path, method, headers: { Host: 'svcd' }, timeout: timeoutMs, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON: status alone */
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Whether an error means no daemon listens on the socket (no socket file, or nobody accepting). */
export function isNotListening(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
}

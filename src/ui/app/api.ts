import { inProject } from './project.ts';

/**
 * The dashboard's one way to the daemon: the same REST API as any client, with the session cookie and
 * the X-SVC-UI header (what makes the daemon accept the cookie). Errors come back with the API's message.
 */
export interface ApiResult<T = unknown> {
  ok: boolean;
  status: number;
  data: T;
  error: string;
}

const HEADERS = { 'X-SVC-UI': '1' };

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const send = () =>
    fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? HEADERS : { ...HEADERS, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  let res: Response;
  try {
    // A read that never got an answer is asked once more: the browser drops what is in flight when the
    // machine's network changes (an interface or address coming or going). A write is never sent twice.
    res = await send().catch((e: unknown) => {
      if (method !== 'GET') throw e;
      return new Promise<Response>((resolve, reject) => setTimeout(() => send().then(resolve, reject), 500));
    });
  } catch (e) {
    return {
      ok: false,
      status: 0,
      data: undefined as T,
      error: `The daemon cannot be reached: ${(e as Error).message}`,
    };
  }
  const text = await res.text();
  let json: { metadata?: unknown; error?: string; type?: string } = {};
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: res.ok, status: res.status, data: text as T, error: res.ok ? '' : text || res.statusText };
  }
  // The API's refusal of the caller (not of the action: a protected container also answers 403).
  if (res.status === 401 || (res.status === 403 && json.error === 'not authorized')) onUnauthorized(res.status);
  if (!res.ok || json.type === 'error')
    return { ok: false, status: res.status, data: json.metadata as T, error: json.error ?? res.statusText };
  return { ok: true, status: res.status, data: json.metadata as T, error: '' };
}

export const get = <T>(path: string) => api<T>('GET', path);

interface Operation {
  id: string;
  status: string;
  err: string;
}

/** A call that may answer with an operation: waits for it, and fails with the operation's error. */
export async function act(method: string, path: string, body?: unknown): Promise<ApiResult> {
  const r = await api<Operation>(method, path, body);
  if (!r.ok || r.status !== 202 || !r.data?.id) return r;
  const waited = await api<Operation>('GET', `/1.0/operations/${encodeURIComponent(r.data.id)}/wait?timeout=120`);
  if (!waited.ok) return waited;
  if (waited.data.status !== 'Success') return { ...waited, ok: false, error: waited.data.err || waited.data.status };
  return waited;
}

let unauthorized: (status: number) => void = () => {};
const onUnauthorized = (s: number) => unauthorized(s);
export function whenUnauthorized(f: (status: number) => void): void {
  unauthorized = f;
}

/** `/1.0/containers/<name><rest>` with the name escaped, in the current project. */
export const containerPath = (name: string, rest = '') =>
  inProject(`/1.0/containers/${encodeURIComponent(name)}${rest}`);

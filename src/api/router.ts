import type { Context, Hono } from 'hono';
import type { AppEnv, AuthLevel } from './context.ts';
import { HttpError } from './errors.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Handler = (c: Context<AppEnv>) => Response | Promise<Response>;
export type RouteSpec = Partial<Record<Method, Handler | { auth: AuthLevel; handler: Handler }>>;

const RANK: Record<AuthLevel, number> = { guest: 0, untrusted: 1, trusted: 2 };

/**
 * Register the handlers of one path. Each method states the lowest caller level it admits
 * (trusted unless said otherwise); other methods get an error envelope naming the allowed ones.
 */
export function route(app: Hono<AppEnv>, path: string, spec: RouteSpec): void {
  const allowed = Object.keys(spec) as Method[];
  for (const method of allowed) {
    const entry = spec[method]!;
    const { auth, handler } = typeof entry === 'function' ? { auth: 'trusted' as AuthLevel, handler: entry } : entry;
    app.on(method, path, (c) => {
      if (RANK[c.get('caller').level] < RANK[auth]) throw new HttpError(403, 'not authorized');
      return handler(c);
    });
  }
  app.all(path, (c) => {
    if (c.req.method === 'HEAD' && allowed.includes('GET')) return c.body(null, 200);
    if (c.req.method === 'OPTIONS') {
      c.header('Allow', allowed.join(', '));
      return c.body(null, 200);
    }
    throw new HttpError(400, `Method ${c.req.method} not allowed on ${c.req.path} (allowed: ${allowed.join(', ')})`, {
      Allow: allowed.join(', '),
    });
  });
}

/**
 * A path segment from the route, decoded; hono already decodes params. No name can hold NUL (and
 * the database refuses it in queries): such a path names nothing.
 */
export function param(c: Context<AppEnv>, name: string): string {
  const value = c.req.param(name) ?? '';
  if (value.includes('\0')) throw new HttpError(404, 'not found');
  return value;
}

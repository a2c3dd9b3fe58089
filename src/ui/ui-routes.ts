import type { Context, Hono } from 'hono';
import type { AppEnv } from '../api/context.ts';
import { sync } from '../api/envelope.ts';
import { HttpError } from '../api/errors.ts';
import { parseListenAddress } from '../api/listeners.ts';
import { route } from '../api/router.ts';
import type { Db } from '../db/types.ts';
import { listContainerConvergence } from '../desired/container-convergence.ts';
import { containerUrl } from '../desired/containers.ts';
import { type Operations, renderOperation } from '../operations/index.ts';
import { readServerKeys } from '../desired/server-config.ts';
import { clearedCookie, cookieValue, SESSION_COOKIE, sessionCookie } from './ui-auth.ts';
import type { UiAssetsSource } from './ui-assets.ts';
import { FAVICON_SVG, PAGE_HEADERS, renderAppPage, renderLoginPage } from './ui-pages.ts';
import type { UiSessions } from './ui-sessions.ts';

export interface UiDeps {
  db: Db;
  node: string;
  ops: Pick<Operations, 'history'>;
  sessions: UiSessions;
  assets: UiAssetsSource;
}

/** How many operations the history answers by default, and at most (the daemon keeps 1,000 per member). */
const HISTORY_DEFAULT = 200;
const HISTORY_MAX = 1000;

const page = (c: Context<AppEnv>, html: string, status: 200 | 403 = 200) => {
  for (const [k, v] of Object.entries(PAGE_HEADERS)) c.header(k, v);
  return c.html(html, status);
};

/** Only the host's root, over the unix socket, makes login URLs and manages sessions (`svcd ui`). */
const unixOnly = (c: Context<AppEnv>) => {
  if (c.get('caller').protocol !== 'unix') throw new HttpError(403, 'not authorized: only over the unix socket');
};

/**
 * The dashboard under /ui/: its pages and bundle (no data in them), the login by one-time URL, the
 * unix-socket endpoints of `svcd ui`, and the one read the LXD API has no place for (convergence).
 */
export function registerUiRoutes(app: Hono<AppEnv>, deps: UiDeps): void {
  const { sessions, assets } = deps;
  // The bundle is loaded at the first request, not at start: a daemon run from src/ (every test's) builds it
  // only when a browser asks (about half a second); a built daemon reads dist/ui/assets/.

  // A page navigation carries no X-SVC-UI header: the app shell is static, so the cookie alone decides
  // which page is shown; the data behind it still needs the full check (ui-caller.ts).
  const loggedIn = async (c: Context<AppEnv>) => {
    const caller = c.get('caller');
    if (caller.protocol === 'tls' && caller.level === 'trusted') return true;
    const secret = cookieValue(c.req.header('cookie'), SESSION_COOKIE);
    return !!secret && !!(await sessions.check(secret));
  };

  app.get('/ui', (c) => c.redirect('/ui/', 301));
  route(app, '/ui/', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const { version } = await assets.get();
        return page(c, (await loggedIn(c)) ? renderAppPage(version) : renderLoginPage(version));
      },
    },
  });

  route(app, '/ui/login', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const { version } = await assets.get();
        const caller = c.get('caller');
        if (caller.protocol !== 'tls')
          return page(c, renderLoginPage(version, 'The dashboard is served over HTTPS only.'), 403);
        const session = await sessions.redeemToken(c.req.query('token') ?? '', {
          address: caller.address,
          userAgent: c.req.header('user-agent'),
        });
        if (!session)
          return page(
            c,
            renderLoginPage(version, 'This login URL has been used or has expired. Run svcd ui for a new one.'),
            403,
          );
        c.header('Set-Cookie', sessionCookie(session.secret, session.maxAgeSec));
        c.header('Referrer-Policy', 'no-referrer');
        c.header('Cache-Control', 'no-store');
        return c.redirect('/ui/', 303);
      },
    },
  });

  // Logout: the session itself is the authority (the middleware made the caller trusted only after the
  // cross-site checks).
  route(app, '/ui/logout', {
    POST: async (c) => {
      const secret = cookieValue(c.req.header('cookie'), SESSION_COOKIE);
      if (secret && c.get('caller').uiSession) await sessions.end(secret);
      c.header('Set-Cookie', clearedCookie());
      return sync(c, {});
    },
  });

  route(app, '/ui/assets/:file', {
    GET: {
      auth: 'guest',
      handler: async (c) => {
        const a = await assets.get();
        const name = c.req.param('file') ?? '';
        const file = a.files.get(name);
        if (!file) throw new HttpError(404, 'not found');
        c.header('Content-Type', file.type);
        c.header('X-Content-Type-Options', 'nosniff');
        c.header('Vary', 'Accept-Encoding');
        // app.js and app.css carry the bundle's hash (?v=), chunks their own in their names: a new build is a new URL.
        const immutable = c.req.query('v') === a.version || name.startsWith('chunk-');
        c.header('Cache-Control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
        if (!/\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) return c.body(file.body);
        c.header('Content-Encoding', 'gzip');
        return c.body(new Uint8Array(file.gzip));
      },
    },
  });
  route(app, '/ui/favicon.svg', {
    GET: {
      auth: 'guest',
      handler: (c) => {
        c.header('Content-Type', 'image/svg+xml');
        c.header('Cache-Control', 'public, max-age=86400');
        return c.body(FAVICON_SVG);
      },
    },
  });

  route(app, '/ui/api/convergence', {
    GET: async (c) => sync(c, await listContainerConvergence(deps.db, c.get('project'), c.req.query('name'))),
  });

  // The other read the dashboard needs: finished operations, which GET /1.0/operations does not list (the
  // spec: running or queued). `?container=` keeps those naming that container.
  route(app, '/ui/api/operations', {
    GET: async (c) => {
      const project = c.get('project');
      const name = c.req.query('container');
      const limit = parseLimit(c.req.query('limit'));
      const resource = name
        ? {
            type: 'containers',
            urls: [...new Set([containerUrl({ name, project }), containerUrl({ name, project: 'default' })])],
          }
        : undefined;
      return sync(c, (await deps.ops.history(project, { limit, resource })).map(renderOperation));
    },
  });

  route(app, '/ui/tokens', {
    POST: async (c) => {
      unixOnly(c);
      const keys = await readServerKeys(deps.db, deps.node, ['core.https_address']);
      const address = keys['core.https_address'] ?? '';
      if (!address)
        throw new HttpError(
          400,
          'The HTTPS listener is off (core.https_address is empty): turn it on with `lxc config set core.https_address 127.0.0.1:8443`',
        );
      const { token, expiresAt } = await sessions.issueToken();
      return sync(c, {
        url: `https://${urlHostOf(address)}/ui/login?token=${token}`,
        expires_at: expiresAt.toISOString(),
      });
    },
  });
  route(app, '/ui/sessions', {
    GET: async (c) => {
      unixOnly(c);
      return sync(c, await sessions.list());
    },
    DELETE: async (c) => {
      unixOnly(c);
      return sync(c, { revoked: await sessions.revokeAll() });
    },
  });
}

/** host:port of a login URL: a wildcard or empty host means this machine, so loopback. */
export function urlHostOf(httpsAddress: string): string {
  const { host, port } = parseListenAddress(httpsAddress);
  const h = host === '::' || host === '0.0.0.0' || host === '' ? '127.0.0.1' : host;
  return h.includes(':') ? `[${h}]:${port}` : `${h}:${port}`;
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return HISTORY_DEFAULT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > HISTORY_MAX)
    throw new HttpError(400, `Invalid limit "${raw}": expected a whole number from 1 to ${HISTORY_MAX}`);
  return n;
}

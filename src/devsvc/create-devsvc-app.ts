import { Hono, type Context } from 'hono';
import type { Logger } from 'pino';
import type { Db } from '../db/types.ts';
import { NotFoundError, ValidationError } from '../desired/errors.ts';
import { readImage } from '../desired/images.ts';
import { imageFilesIn } from '../host/images/create-image-store.ts';
import { openImageFiles } from '../host/image-host/open-image-files.ts';
import { sendImageFiles } from '../api/routes/image-export.ts';
import { devsvcEnabled, devsvcImagesEnabled, guestConfigOf, isGuestKey, renderMetaData } from './guest-view.ts';
import { readGuest, type Guest } from './read-guest.ts';
import { imagesDirOf } from '../host/layout.ts';

/** The guest's readiness as it last told us (PATCH /1.0); `Started` until then. */
export type GuestState = 'Started' | 'Ready';

/** Which container a request is for: the one whose socket it came in on (set by the listener). */
export interface DevsvcEnv {
  Bindings: { containerId: string };
}

export interface DevsvcAppDeps {
  db: Db;
  /** This node's name, the `location` the guest sees. */
  node: string;
  stateDir: string;
  log: Logger;
  guestState: { get(id: string): GuestState; set(id: string, s: GuestState): void };
}

/** An answer to the guest: devsvc errors are plain text with the HTTP status, as on LXD's /dev/lxd. */
class GuestError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 500,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The guest-facing API (devsvc, svcd's /dev/lxd): plain JSON or text, no envelope, no
 * authentication beyond the socket the request came in on, and only about that container. The
 * desired state is read on every request, so config changes show at once.
 */
export function createDevsvcApp(deps: DevsvcAppDeps): Hono<DevsvcEnv> {
  const app = new Hono<DevsvcEnv>();

  /** The caller's container, or 403 when its devsvc was turned off meanwhile (the listener closes soon after). */
  async function guest(c: Context<DevsvcEnv>): Promise<Guest> {
    const g = await readGuest(deps.db, c.env.containerId);
    if (!g) throw new GuestError(404, 'not found');
    if (!devsvcEnabled(g.config)) throw new GuestError(403, 'not authorized');
    return g;
  }

  app.get('/', (c) => c.json(['/1.0']));
  app.get('/1.0', async (c) => {
    await guest(c);
    return c.json({
      api_version: '1.0',
      location: deps.node,
      instance_type: 'container',
      state: deps.guestState.get(c.env.containerId),
    });
  });
  app.patch('/1.0', async (c) => {
    await guest(c);
    const body = (await c.req.json().catch(() => undefined)) as { state?: unknown } | undefined;
    const state = body?.state;
    if (state !== 'Ready' && state !== 'Started') throw new GuestError(400, 'state must be "Ready" or "Started"');
    deps.guestState.set(c.env.containerId, state);
    return c.body(null, 200);
  });
  app.get('/1.0/config', async (c) => {
    const { config } = await guest(c);
    return c.json(Object.keys(guestConfigOf(config)).map((k) => `/1.0/config/${encodeURIComponent(k)}`));
  });
  app.get('/1.0/config/:key', async (c) => {
    const { config } = await guest(c);
    const key = c.req.param('key');
    if (!isGuestKey(key)) throw new GuestError(403, 'not authorized');
    const value = config[key];
    if (value === undefined) throw new GuestError(404, 'not found');
    return c.text(value);
  });
  app.get('/1.0/meta-data', async (c) => {
    const { row, config } = await guest(c);
    return c.text(renderMetaData(row.name, config));
  });
  app.get('/1.0/devices', async (c) => c.json((await guest(c)).devices));
  // The websocket upgrade is taken by the listener; a plain GET is a client mistake.
  app.get('/1.0/events', () => {
    throw new GuestError(400, 'websocket upgrade required');
  });
  app.get('/1.0/images/:fingerprint/export', async (c) => {
    const { row, config } = await guest(c);
    if (!devsvcImagesEnabled(config)) throw new GuestError(403, 'not authorized');
    // As on LXD: only images a guest could have from elsewhere anyway (public ones, cached ones).
    const img = await readImage(deps.db, row.project, c.req.param('fingerprint')).catch((e: unknown) => {
      if (e instanceof NotFoundError) throw new GuestError(404, 'not found');
      if (e instanceof ValidationError) throw new GuestError(400, e.message);
      throw e;
    });
    if (!img.public && !img.cached) throw new GuestError(404, 'not found');
    return sendImageFiles(c, img, () =>
      openImageFiles(img.fingerprint, imageFilesIn(imagesDirOf(deps.stateDir), img.fingerprint, img.split)),
    );
  });

  app.notFound((c) => c.text('not found', 404));
  app.onError((err, c) => {
    if (err instanceof GuestError) return c.text(err.message, err.status);
    deps.log.error(
      { err, method: c.req.method, url: c.req.path, container: c.env?.containerId },
      'devsvc request failed',
    );
    return c.text('internal server error', 500);
  });
  return app;
}

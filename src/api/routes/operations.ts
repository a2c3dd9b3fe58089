import type { Hono } from 'hono';
import { operationUrl, renderOperation } from '../../operations/index.ts';
import { StatusCode, statusName } from '../../operations/status.ts';
import type { AppEnv } from '../context.ts';
import type { ApiDeps } from '../deps.ts';
import { isLxdEraClient, sync } from '../envelope.ts';
import { HttpError } from '../errors.ts';
import { renderCollection } from '../query.ts';
import { param, route } from '../router.ts';
import { requestSignal } from '../request-signal.ts';

export function registerOperationRoutes(app: Hono<AppEnv>, deps: ApiDeps): void {
  const { ops } = deps;
  route(app, '/1.0/operations', {
    GET: async (c) => {
      const rows = await ops.list(c.get('project'));
      const items = await renderCollection(c, rows, { url: (r) => operationUrl(r.id), render: renderOperation });
      if (!isLxdEraClient(c)) return sync(c, items);
      // LXD's clients (`lxc operation list`) decode a map of lower-case status to that list.
      const byStatus: Record<string, unknown[]> = {};
      items.forEach((item) => {
        const row =
          typeof item === 'string'
            ? rows.find((r) => operationUrl(r.id) === item)
            : rows.find((r) => r.id === (item as { id: string }).id);
        (byStatus[statusName(row?.statusCode ?? StatusCode.Running).toLowerCase()] ??= []).push(item);
      });
      return sync(c, byStatus);
    },
  });
  route(app, '/1.0/operations/:id', {
    GET: async (c) => sync(c, renderOperation(await ops.get(param(c, 'id')))),
    DELETE: async (c) => {
      await ops.cancel(param(c, 'id'));
      return sync(c, {}, { status: 202 });
    },
  });
  route(app, '/1.0/operations/:id/wait', {
    GET: async (c) => {
      const raw = c.req.query('timeout');
      if (raw !== undefined && raw !== '' && !/^-?\d+(\.\d+)?$/.test(raw))
        throw new HttpError(400, `Invalid timeout "${raw}": expected seconds`);
      const seconds = raw === undefined || raw === '' ? -1 : Number(raw);
      const row = await ops.wait(param(c, 'id'), seconds < 0 ? -1 : seconds * 1000, requestSignal(c));
      return sync(c, renderOperation(row));
    },
  });
  // Websocket upgrades of /websocket are served by the listener (server.ts); a plain GET is an error.
  route(app, '/1.0/operations/:id/websocket', {
    GET: {
      auth: 'guest',
      handler: () => {
        throw new HttpError(400, 'This endpoint needs a websocket upgrade');
      },
    },
  });
  route(app, '/1.0/events', {
    GET: () => {
      throw new HttpError(400, 'This endpoint needs a websocket upgrade');
    },
  });
}

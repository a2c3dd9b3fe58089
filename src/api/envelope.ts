import type { Context } from 'hono';
import type { OperationRow } from '../desired/schema/index.ts';
import { operationUrl, renderOperation } from '../operations/index.ts';

type Status = 200 | 201 | 202;

/** Sync envelope (spec: Response envelopes). */
export function syncBody(metadata: unknown) {
  return {
    type: 'sync',
    status: 'Success',
    status_code: 200,
    operation: '',
    error_code: 0,
    error: '',
    metadata: metadata ?? {},
  };
}

export function sync(c: Context, metadata: unknown, opts: { status?: Status; etag?: string } = {}): Response {
  if (opts.etag) c.header('ETag', `"${opts.etag}"`);
  return c.json(syncBody(metadata), opts.status ?? 200);
}

/** A sync envelope around metadata that is already JSON text (a cached rendering). */
export function syncRaw(c: Context, metadataJson: string, opts: { etag?: string } = {}): Response {
  if (opts.etag) c.header('ETag', `"${opts.etag}"`);
  const head = JSON.stringify(syncBody(null)).replace(/"metadata":\{\}\}$/, '"metadata":');
  c.header('Content-Type', 'application/json');
  return c.body(`${head}${metadataJson}}`, 200);
}

/** Async envelope: 202, `Location` = operation URL, metadata = the operation object. */
export function async(c: Context, op: OperationRow): Response {
  const url = operationUrl(op.id);
  c.header('Location', url);
  return c.json(
    {
      type: 'async',
      status: 'OK',
      status_code: 100,
      operation: url,
      error_code: 0,
      error: '',
      metadata: renderOperation(op),
    },
    202,
  );
}

/**
 * Clients written for LXD (its Go client, as in the `lxc` CLI, and python-requests as in pylxd)
 * treat a body-less 204 as a failure: they get the 201 + sync body LXD sends.
 */
const BODY_ONLY_CLIENTS = /^(Go-http-client|LXD|python-requests|pylxd)/i;

export function isLxdEraClient(c: Context): boolean {
  return BODY_ONLY_CLIENTS.test(c.req.header('user-agent') ?? '');
}

/** Rename answer: 204 with the renamed resource's URL in `Location` (201 + sync body for LXD-era clients). */
export function renamedResponse(c: Context, location: string): Response {
  c.header('Location', location);
  if (isLxdEraClient(c)) return c.json(syncBody({}), 201);
  return c.body(null, 204);
}

export function errorBody(status: number, message: string, metadata: Record<string, unknown> = {}) {
  return { type: 'error', status: '', status_code: 0, operation: '', error: message, error_code: status, metadata };
}

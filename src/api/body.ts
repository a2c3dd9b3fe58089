import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import * as v from 'valibot';
import { HttpError } from './errors.ts';

/** JSON bodies larger than this are refused (uploads use their own streaming paths). */
export const MAX_JSON_BODY = 4 * 1024 * 1024;

/**
 * A body refused before it was read (too large, wrong method, not authorized...) is still read and
 * dropped, up to this size, before the error is answered. Left unread, it stalls the connection,
 * which is then cut: a keep-alive client's next request on it fails, and a `Connection: close`
 * client can lose the answer to the reset. Past this size the answer closes the connection.
 */
const DISCARD_LIMIT = 64 * 1024 * 1024;

/** Read and drop what is left of a body; false (stream cancelled) once DISCARD_LIMIT is passed. */
async function dropRest(reader: ReadableStreamDefaultReader<Uint8Array>, size: number): Promise<boolean> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return true;
    size += value.byteLength;
    if (size > DISCARD_LIMIT) {
      await reader.cancel().catch(() => {});
      return false;
    }
  }
}

/**
 * The node request under @hono/node-server (absent under `app.request()` in tests). Its body is read from it
 * directly: `c.req.raw.body` would first build the web Request and a web stream over it (Readable.toWeb),
 * measured at about 0.25 ms of a small PATCH (PATCH of a missing container: 0.95 → 0.71 ms, median of 200).
 */
function incomingOf(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

/** Requests whose body was too large even to drain (DISCARD_LIMIT): answered with `Connection: close`, never read again. */
const abandoned = new WeakSet<IncomingMessage>();

/** Read `incoming` to its end, up to `limit` bytes: the bytes, or the size read once past the limit (the rest left unread). */
function readIncoming(incoming: IncomingMessage, limit: number): Promise<Buffer | number> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (v: Buffer | number | Error) => {
      incoming.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (v instanceof Error) reject(v);
      else resolve(v);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        incoming.pause();
        return done(size);
      }
      chunks.push(chunk);
    };
    const onEnd = () => done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    const onError = (e: Error) => done(e);
    const onClose = () =>
      done(incoming.readableEnded ? Buffer.concat(chunks) : new Error('the request was cut before its body ended'));
    if (incoming.readableEnded) return resolve(Buffer.alloc(0));
    incoming.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    incoming.resume(); // flowing again after an earlier read paused it past its limit
  });
}

/** Drop a request body nobody read (see DISCARD_LIMIT). False when it was too large to drain. */
export async function discardUnreadBody(c: Context): Promise<boolean> {
  const incoming = incomingOf(c);
  if (incoming) {
    if (incoming.readableEnded) return true;
    if (abandoned.has(incoming) || Number(c.req.header('content-length') ?? '0') > DISCARD_LIMIT) return false;
    const got = await readIncoming(incoming, DISCARD_LIMIT).catch(() => 0);
    return typeof got !== 'number';
  }
  const body = c.req.raw.body;
  if (!body || c.req.raw.bodyUsed) return true;
  if (Number(c.req.header('content-length') ?? '0') > DISCARD_LIMIT) return false;
  return dropRest(body.getReader(), 0).catch(() => false);
}

/** Bodies read before their route (a placed create that was to be forwarded, then served here after all). */
const readEarlier = new WeakMap<Request, Buffer>();
/** The whole body of `c`, read by a middleware: its route reads this instead of the spent stream. */
export function keepReadBody(c: Context, body: Buffer): void {
  readEarlier.set(c.req.raw, body);
}

/** Read the raw body, refusing it once it grows past `limit` bytes. */
export async function readBodyLimited(c: Context, limit: number): Promise<Uint8Array> {
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > limit) throw new HttpError(400, `Request body too large (limit ${limit} bytes)`);
  const kept = readEarlier.get(c.req.raw);
  if (kept) {
    if (kept.length > limit) throw new HttpError(400, `Request body too large (limit ${limit} bytes)`);
    return kept;
  }
  const incoming = incomingOf(c);
  if (incoming) {
    const got = await readIncoming(incoming, limit);
    if (typeof got !== 'number') return got;
    const drained = typeof (await readIncoming(incoming, DISCARD_LIMIT - got).catch(() => 0)) !== 'number';
    if (!drained) abandoned.add(incoming);
    throw new HttpError(400, `Request body too large (limit ${limit} bytes)`, drained ? {} : { Connection: 'close' });
  }
  const body = c.req.raw.body;
  if (!body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      const drained = await dropRest(reader, size);
      throw new HttpError(400, `Request body too large (limit ${limit} bytes)`, drained ? {} : { Connection: 'close' });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * Parse and validate a JSON body. An empty body counts as `{}`. Top-level `null` values count as
 * absent and unknown top-level fields are ignored (newer clients send both); a known field of
 * the wrong type is a 400 naming the field.
 */
export async function readJson<S extends v.GenericSchema>(c: Context, schema: S): Promise<v.InferOutput<S>> {
  const raw = Buffer.from(await readBodyLimited(c, MAX_JSON_BODY)).toString('utf8');
  let parsed: unknown = {};
  // PostgreSQL text and jsonb cannot hold NUL: refuse it here rather than fail in the database.
  let nulIn: string | undefined;
  if (raw.trim() !== '') {
    try {
      parsed = JSON.parse(raw, (key, val: unknown) => {
        if (key.includes('\0') || (typeof val === 'string' && val.includes('\0'))) nulIn ??= key;
        return val;
      });
    } catch (e) {
      throw new HttpError(400, `Malformed JSON body: ${(e as Error).message}`);
    }
  }
  if (nulIn !== undefined)
    throw new HttpError(
      400,
      `Invalid ${nulIn ? JSON.stringify(nulIn) : 'request body'}: NUL characters are not allowed`,
    );
  if (parsed === null) parsed = {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'Request body must be a JSON object');
  const cleaned = Object.fromEntries(
    Object.entries(parsed as Record<string, unknown>).filter(([, val]) => val !== null),
  );
  const res = v.safeParse(schema, cleaned);
  if (!res.success) throw new HttpError(400, describeIssue(res.issues[0]));
  return res.output;
}

function describeIssue(issue: v.BaseIssue<unknown> | undefined): string {
  if (!issue) return 'Invalid request body';
  const path = v.getDotPath(issue);
  const field = path ? `"${path}"` : 'request body';
  if (path && issue.input === undefined) return `Missing ${field}: it is required`;
  return `Invalid ${field}: ${issue.message}`;
}

// --- Reusable field schemas ---------------------------------------------------------------

/** A JSON object (not an array: `v.record` alone takes `[]` as `{}`) mapping strings to `value`. */
export const objectMap = <S extends v.GenericSchema>(value: S) =>
  v.pipe(
    v.custom<Record<string, unknown>>(
      (x) => typeof x === 'object' && x !== null && !Array.isArray(x),
      'expected an object',
    ),
    v.record(v.string(), value),
  );

/** A string→string map. Clients sometimes send numbers or booleans as config values: they are stringified. */
export const stringMap = objectMap(
  v.pipe(
    v.union([v.string(), v.number(), v.boolean()], 'expected a string value'),
    v.transform((x) => String(x)),
  ),
);

/** Devices: name → properties; each property a string. */
export const deviceMap = objectMap(stringMap);

export const optionalString = v.optional(v.string('expected a string'));

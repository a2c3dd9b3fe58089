import type { Context } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../context.ts';
import { MAX_JSON_BODY } from '../body.ts';
import { HttpError } from '../errors.ts';

/** Past this much, the rest of a refused upload is not read: the connection is closed instead. */
const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * The request body of POST /1.0/images, read by hand: it may be a JSON create request or an
 * upload of any size. The first chunk can be looked at before deciding; stopping early never
 * cancels the stream (the rest can still be drained so the answer reaches the client).
 */
export function openImageBody(c: Context<AppEnv>) {
  const reader = c.req.raw.body?.getReader();
  let pending: Uint8Array | undefined;
  let ended = !reader;
  const read = async (): Promise<Uint8Array | undefined> => {
    if (pending) {
      const p = pending;
      pending = undefined;
      return p;
    }
    if (ended) return undefined;
    const { done, value } = await reader!.read();
    if (done) ended = true;
    return done ? undefined : value;
  };
  const body = {
    /** The first bytes, left in place for the next read. */
    async peek(): Promise<Uint8Array | undefined> {
      pending ??= await read();
      return pending;
    },
    async *chunks(): AsyncGenerator<Uint8Array> {
      for (let chunk = await read(); chunk; chunk = await read()) yield chunk;
    },
    /** The whole body as text, refused (400) past `limit` bytes. */
    async text(limit: number): Promise<string> {
      const parts: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of body.chunks()) {
        size += chunk.byteLength;
        if (size > limit) {
          const drained = await body.drain();
          throw new HttpError(
            400,
            `Request body too large (limit ${limit} bytes)`,
            drained ? {} : { Connection: 'close' },
          );
        }
        parts.push(chunk);
      }
      return Buffer.concat(parts).toString('utf8');
    },
    /** Read and drop the rest (up to DRAIN_LIMIT); false when the connection must be closed. */
    async drain(): Promise<boolean> {
      let size = 0;
      try {
        for await (const chunk of body.chunks()) {
          size += chunk.byteLength;
          if (size > DRAIN_LIMIT) {
            await reader?.cancel().catch(() => {});
            return false;
          }
        }
        return true;
      } catch {
        return false;
      }
    },
  };
  return body;
}
export type ImageBody = ReturnType<typeof openImageBody>;

/** Does the body start like a JSON object (LXD takes any body that decodes as JSON for a create request)? */
export function looksLikeJson(first: Uint8Array | undefined): boolean {
  if (!first) return false;
  for (const b of first) {
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    return b === 0x7b;
  }
  return false;
}

/** Parse a JSON create request read by hand, with readJson's rules (null = absent, unknown fields ignored). */
export async function readImageJson<S extends v.GenericSchema>(body: ImageBody, schema: S): Promise<v.InferOutput<S>> {
  const raw = await body.text(MAX_JSON_BODY);
  let parsed: unknown;
  try {
    parsed = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch (e) {
    throw new HttpError(400, `Malformed JSON body: ${(e as Error).message}`);
  }
  if (parsed === null) parsed = {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpError(400, 'Request body must be a JSON object');
  if (raw.includes('\\u0000')) throw new HttpError(400, 'Invalid request body: NUL characters are not allowed');
  const cleaned = Object.fromEntries(
    Object.entries(parsed as Record<string, unknown>).filter(([, val]) => val !== null),
  );
  const res = v.safeParse(schema, cleaned);
  if (!res.success) {
    const issue = res.issues[0];
    const path = issue ? v.getDotPath(issue) : null;
    throw new HttpError(
      400,
      path ? `Invalid "${path}": ${issue!.message}` : `Invalid request body: ${issue?.message ?? ''}`,
    );
  }
  return res.output;
}

import type { IncomingMessage } from 'node:http';

/** Read an LXD-style JSON answer (bounded) and return its metadata; an error envelope or status becomes an Error starting with `what`. */
// biome-ignore lint/suspicious/noExplicitAny: the other server's JSON, read field by field with checks
export async function readEnvelope(res: IncomingMessage, what: string, limit = 8 * 1024 * 1024): Promise<any> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new Error(`${what}: answer too large`);
    chunks.push(chunk);
  }
  // biome-ignore lint/suspicious/noExplicitAny: the other server's JSON, read field by field with checks
  let body: any;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Error(`${what}: ${res.statusCode} and not a JSON answer`);
  }
  if (res.statusCode !== 200 || body?.type === 'error')
    throw new Error(`${what}: ${body?.error || `${res.statusCode} ${res.statusMessage ?? ''}`.trim()}`);
  return body?.metadata;
}

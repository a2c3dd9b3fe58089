/**
 * A streaming multipart/form-data reader (RFC 7578): parts are handed over as they arrive, never
 * held in memory whole, so image uploads of any size go straight to disk.
 */

export interface PartInfo {
  /** `name` of the part's Content-Disposition. */
  name: string;
  filename?: string | undefined;
  headers: Record<string, string>;
}

export interface PartHandlers {
  onPart(part: PartInfo): Promise<void>;
  onData(chunk: Uint8Array): Promise<void>;
  onPartEnd(): Promise<void>;
}

export class MultipartError extends Error {}

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** The boundary of a `multipart/form-data; boundary=...` content type, or undefined. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))/i.exec(contentType);
  const b = m?.[1]?.replace(/\\(.)/g, '$1') ?? m?.[2];
  return b && b.length <= 200 ? b : undefined;
}

/** Parameters of a Content-Disposition value (`form-data; name="x"; filename="y"`). */
export function parseDisposition(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = m[1]!.toLowerCase();
    out[key] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!.trim();
  }
  return out;
}

/** Read a multipart body, calling the handlers in order; resolves after the closing delimiter. */
export async function readMultipart(body: AsyncIterable<Uint8Array>, boundary: string, h: PartHandlers): Promise<void> {
  const first = Buffer.from(`--${boundary}`);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  let buf: Buffer = Buffer.alloc(0);
  type State = 'preamble' | 'afterDelimiter' | 'headers' | 'body' | 'done';
  let state = 'preamble' as State;

  const step = async (final: boolean): Promise<boolean> => {
    switch (state) {
      case 'preamble': {
        // The first delimiter may start the body or follow a preamble line.
        const at = buf.indexOf(first);
        if (at === -1) {
          if (buf.length > first.length) buf = buf.subarray(buf.length - first.length);
          return false;
        }
        buf = buf.subarray(at + first.length);
        state = 'afterDelimiter';
        return true;
      }
      case 'afterDelimiter': {
        if (buf.length < 2) return false;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = 'done';
          return false;
        }
        // Transport padding (spaces, tabs) may precede the CRLF.
        const eol = buf.indexOf(CRLF);
        if (eol === -1) {
          if (buf.length > 1024) throw new MultipartError('malformed multipart delimiter');
          return false;
        }
        if (!/^[ \t]*$/.test(buf.subarray(0, eol).toString('latin1')))
          throw new MultipartError('malformed multipart delimiter');
        buf = buf.subarray(eol + 2);
        state = 'headers';
        return true;
      }
      case 'headers': {
        // A part without headers starts with the empty line right away.
        const end = buf.subarray(0, 2).equals(CRLF) ? -2 : buf.indexOf(HEADER_END);
        if (end === -1) {
          if (buf.length > MAX_HEADER_BYTES) throw new MultipartError('multipart part headers too large');
          return false;
        }
        const headers: Record<string, string> = {};
        if (end >= 0)
          for (const line of buf.subarray(0, end).toString('utf8').split('\r\n')) {
            const colon = line.indexOf(':');
            if (colon <= 0) throw new MultipartError('malformed multipart part header');
            headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
          }
        buf = buf.subarray(end + 4);
        const disp = parseDisposition(headers['content-disposition'] ?? '');
        if (!/^form-data\b/i.test(headers['content-disposition'] ?? '') || disp.name === undefined)
          throw new MultipartError('multipart part without a form-data Content-Disposition name');
        await h.onPart({ name: disp.name, filename: disp.filename, headers });
        state = 'body';
        return true;
      }
      case 'body': {
        const at = buf.indexOf(delimiter);
        if (at === -1) {
          // Keep what could be the start of a delimiter split across chunks.
          const keep = final ? 0 : Math.min(buf.length, delimiter.length - 1);
          if (buf.length > keep) {
            await h.onData(buf.subarray(0, buf.length - keep));
            buf = Buffer.from(buf.subarray(buf.length - keep));
          }
          return false;
        }
        if (at > 0) await h.onData(buf.subarray(0, at));
        buf = buf.subarray(at + delimiter.length);
        await h.onPartEnd();
        state = 'afterDelimiter';
        return true;
      }
      case 'done':
        return false;
    }
  };

  for await (const chunk of body) {
    if (state === 'done') continue; // the epilogue is read and ignored
    buf = buf.length ? Buffer.concat([buf, chunk]) : Buffer.from(chunk);
    while (await step(false));
  }
  while (state !== 'done' && (await step(true)));
  if (state !== 'done') throw new MultipartError('multipart body ended before its closing delimiter');
}

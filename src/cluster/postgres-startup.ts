/**
 * The first message of a PostgreSQL client (protocol 3.0): `int32 length, int32 196608`, then
 * `name\0value\0` pairs and a final `\0`. The cluster's database tunnel reads it to see which role a member
 * logs in as before any byte reaches the server.
 */
const PROTOCOL_3 = 196_608;
/** SSLRequest and GSSENCRequest: the tunnel is already TLS; the server is told no (a single `N`). */
const ENCRYPTION_REQUESTS = new Set([80_877_103, 80_877_104]);
/** A startup message is small: a client sending more before it is whole is not a PostgreSQL client. */
export const MAX_STARTUP_BYTES = 8_192;

/** A CancelRequest (16 bytes: code, backend pid, secret) asks the server to cancel a query; harmless to pass on. */
const CANCEL_REQUEST = 80_877_102;

export type StartupRead =
  | { kind: 'incomplete' }
  | { kind: 'cancel'; length: 16 }
  | { kind: 'encryption-request'; length: 8 }
  | { kind: 'startup'; length: number; params: Record<string, string> }
  | { kind: 'invalid'; reason: string };

/** A FATAL ErrorResponse (SQLSTATE `code`) that a client shows as the server's own error. */
export function renderFatalError(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([head, fields]);
}

/** Parse what a client sent so far (pure). */
export function readStartupMessage(buf: Buffer): StartupRead {
  if (buf.length < 8) return buf.length > MAX_STARTUP_BYTES ? invalid('too long') : { kind: 'incomplete' };
  const length = buf.readInt32BE(0);
  const code = buf.readInt32BE(4);
  if (length === 8 && ENCRYPTION_REQUESTS.has(code)) return { kind: 'encryption-request', length: 8 };
  if (length === 16 && code === CANCEL_REQUEST)
    return buf.length < 16 ? { kind: 'incomplete' } : { kind: 'cancel', length: 16 };
  if (code !== PROTOCOL_3) return invalid(`protocol ${code >> 16}.${code & 0xffff} is not 3.0`);
  if (length < 9 || length > MAX_STARTUP_BYTES) return invalid(`a startup message of ${length} bytes`);
  if (buf.length < length) return { kind: 'incomplete' };
  if (buf[length - 1] !== 0) return invalid('the startup message does not end with a zero byte');
  const parts = buf
    .subarray(8, length - 1)
    .toString('utf8')
    .split('\0');
  // Pairs, each ended by a zero byte: the split leaves one empty string after the last.
  if (parts.pop() !== '' || parts.length % 2) return invalid('the startup parameters are not name/value pairs');
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 2) params[parts[i]!] = parts[i + 1]!;
  return { kind: 'startup', length, params };
}

const invalid = (reason: string): StartupRead => ({ kind: 'invalid', reason });

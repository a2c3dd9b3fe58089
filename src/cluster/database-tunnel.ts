/**
 * The cluster's database over the members' HTTPS listener. On the embedded engine the bootstrap member's
 * private PostgreSQL server is the cluster's database, and it listens on no TCP port: a member reaches it by
 * an HTTP upgrade on the serving member's HTTPS address, authenticated both ways by the cluster certificate
 * (the member presents it; the member checks the server presents it), then speaks PostgreSQL's protocol
 * through it to the server's unix socket, logging in as its own role with its own password.
 */
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { fingerprintOfDer } from '../desired/certificates.ts';
import { MEMBER_CONNECT_MS, splitAddress } from './member-client.ts';
import { MAX_STARTUP_BYTES, readStartupMessage, renderFatalError } from './postgres-startup.ts';

export const DATABASE_TUNNEL_PATH = '/internal/cluster/database';
const PROTOCOL = 'svcd-postgres';

/** A member's end: a connected stream to the cluster's database server (postgres.js `socket` option). */
export function dialDatabaseTunnel(opts: {
  address: string;
  pin: string;
  client: { cert: string; key: string };
  timeoutMs?: number;
}): Promise<Duplex> {
  const { host, port } = splitAddress(opts.address);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      cert: opts.client.cert,
      key: opts.client.key,
      // Verified by pin: the cluster certificate is self-signed.
      rejectUnauthorized: false,
      ...(net.isIP(host) ? {} : { servername: host }),
    });
    const fail = (e: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(Object.assign(e, { code: 'CLUSTER_DATABASE_UNREACHABLE' }));
    };
    const timer = setTimeout(
      () =>
        fail(
          new Error(
            `the cluster's database at ${opts.address} did not answer within ${(opts.timeoutMs ?? MEMBER_CONNECT_MS) / 1000} s`,
          ),
        ),
      opts.timeoutMs ?? MEMBER_CONNECT_MS,
    );
    socket.once('error', fail);
    socket.once('secureConnect', () => {
      const peer = socket.getPeerX509Certificate();
      if (!peer || fingerprintOfDer(peer.raw) !== opts.pin)
        return fail(new Error(`${opts.address} does not present the cluster certificate`));
      socket.write(
        `GET ${DATABASE_TUNNEL_PATH} HTTP/1.1\r\nHost: ${opts.address}\r\nConnection: Upgrade\r\nUpgrade: ${PROTOCOL}\r\n\r\n`,
      );
    });
    let head = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 16_384) fail(new Error(`${opts.address} answered the database tunnel with no HTTP head`));
        return;
      }
      socket.off('data', onData);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      const rest = head.subarray(end + 4);
      if (status !== 101) {
        let body = rest.toString('utf8');
        try {
          body = (JSON.parse(body) as { error?: string }).error ?? body;
        } catch {}
        return fail(new Error(`the cluster's database tunnel at ${opts.address} refused: ${status} ${body}`.trim()));
      }
      clearTimeout(timer);
      socket.off('error', fail);
      // Held until its new reader listens (an explicitly paused stream stays paused when one does).
      socket.pause();
      if (rest.length) socket.unshift(rest);
      const onListener = (event: string) => {
        if (event !== 'data') return;
        socket.off('newListener', onListener);
        process.nextTick(() => socket.resume());
      };
      socket.on('newListener', onListener);
      resolve(socket);
    };
    socket.on('data', onData);
  });
}

/**
 * The database driver's socket factory: the tunnel, or, when it cannot be opened, a stream that fails as
 * a refused TCP connection does (an error, then close). postgres.js handles a factory that rejects by
 * leaving that connection "connecting" for ever, with its queries waiting on it.
 */
export async function tunnelSocketForDriver(opts: Parameters<typeof dialDatabaseTunnel>[0]): Promise<Duplex> {
  try {
    return await dialDatabaseTunnel(opts);
  } catch (e) {
    const failed = new Duplex({
      read() {},
      write(_chunk, _encoding, done) {
        done();
      },
    });
    setImmediate(() => {
      failed.emit('error', e);
      failed.destroy();
    });
    return failed;
  }
}

/** Answer an upgrade that is refused, in the API's error envelope. */
export function refuseTunnel(socket: Duplex, status: 403 | 404, message: string): void {
  const body = JSON.stringify({ type: 'error', error: message, error_code: status });
  const reason = status === 403 ? 'Forbidden' : 'Not Found';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * The serving member's end, for an upgrade whose TLS client certificate the caller has checked: the
 * client's startup message must name a role `mayLogIn` allows (never the server's superuser, whose local
 * logins are trusted) before anything is passed to the server's unix socket `socketPath`.
 */
export function serveDatabaseTunnel(
  socket: Duplex,
  head: Buffer,
  opts: { socketPath: string; mayLogIn: (user: string) => boolean; onError?: (e: Error) => void },
): void {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${PROTOCOL}\r\n\r\n`);
  let buf = head;
  const deny = (message: string) => {
    socket.off('data', onData);
    socket.end(renderFatalError('28000', message));
  };
  const onData = (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    examine();
  };
  const examine = () => {
    for (;;) {
      const r = readStartupMessage(buf);
      if (r.kind === 'incomplete') {
        if (buf.length > MAX_STARTUP_BYTES) deny('the startup message is too long');
        return;
      }
      if (r.kind === 'invalid') return deny(`not a PostgreSQL startup message: ${r.reason}`);
      if (r.kind === 'encryption-request') {
        // The tunnel is TLS already: no encryption inside it.
        socket.write('N');
        buf = buf.subarray(8);
        continue;
      }
      if (r.kind === 'startup' && !opts.mayLogIn(r.params.user ?? ''))
        return deny(`role "${r.params.user ?? ''}" may not log in through the cluster's database tunnel`);
      socket.off('data', onData);
      socket.pause();
      return connect();
    }
  };
  const connect = () => {
    const server = net.connect(opts.socketPath);
    server.once('connect', () => {
      server.write(buf);
      socket.pipe(server);
      server.pipe(socket);
      socket.resume();
    });
    const end = (e?: Error) => {
      if (e) opts.onError?.(e);
      server.destroy();
      socket.destroy();
    };
    server.once('error', end);
    server.once('close', () => socket.destroy());
    socket.once('close', () => server.destroy());
    socket.once('error', end);
  };
  socket.on('data', onData);
  // The HTTP server hands over the socket of an upgrade paused.
  socket.resume();
  if (buf.length) examine();
}

/**
 * The debugging listener of `core.debug_address` (LXD's pprof_http): plain HTTP on the address given, with what
 * node offers in place of Go's pprof. Like LXD's, it has no authentication: bind it to a loopback address.
 *   GET /debug/pprof/                  an index of what follows
 *   GET /debug/pprof/heap              a V8 heap snapshot (`.heapsnapshot`, for Chrome DevTools), streamed
 *   GET /debug/pprof/profile?seconds=N a CPU profile over N seconds (1..300, default 30; `.cpuprofile` JSON)
 *   GET /debug/vars                    live figures (debug-figures.ts)
 * Never on unless the key is set; opened, moved and closed live by the server config route.
 */
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import { getHeapSnapshot } from 'node:v8';
import type { Logger } from 'pino';
import { HostInputError } from '../../host/errors.ts';
import { closeServer, listen, parseListenAddress } from '../listeners.ts';
import { createDebugFigures } from './debug-figures.ts';

const MAX_PROFILE_SECONDS = 300;

const INDEX = `svcd debug listener (core.debug_address)
/debug/pprof/heap               V8 heap snapshot (open in Chrome DevTools, Memory tab)
/debug/pprof/profile?seconds=N  CPU profile over N seconds (open in Chrome DevTools, Performance tab)
/debug/vars                     memory, CPU, active handles, event loop delay (JSON)
`;

export function createDebugListener(deps: { log: Pick<Logger, 'info' | 'warn'> }) {
  const figures = createDebugFigures();
  let server: http.Server | undefined;
  let address: string | undefined;
  let profiling = false;

  const send = (res: http.ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  async function cpuProfile(seconds: number): Promise<string> {
    const session = new Session();
    session.connect();
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      await new Promise((r) => setTimeout(r, seconds * 1000));
      const { profile } = await session.post('Profiler.stop');
      return JSON.stringify(profile);
    } finally {
      session.disconnect();
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://debug');
    if (req.method !== 'GET') return send(res, 405, 'text/plain', 'only GET\n');
    if (url.pathname === '/debug/pprof/' || url.pathname === '/debug/pprof' || url.pathname === '/')
      return send(res, 200, 'text/plain; charset=utf-8', INDEX);
    if (url.pathname === '/debug/vars')
      return send(res, 200, 'application/json', `${JSON.stringify(figures.read())}\n`);
    if (url.pathname === '/debug/pprof/heap') {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="svcd.heapsnapshot"',
      });
      getHeapSnapshot().pipe(res);
      return;
    }
    if (url.pathname === '/debug/pprof/profile') {
      const raw = url.searchParams.get('seconds') ?? '30';
      const seconds = Number(raw);
      if (!/^\d+$/.test(raw) || seconds < 1 || seconds > MAX_PROFILE_SECONDS)
        return send(res, 400, 'text/plain', `seconds must be an integer from 1 to ${MAX_PROFILE_SECONDS}\n`);
      if (profiling) return send(res, 409, 'text/plain', 'a CPU profile is already being taken\n');
      profiling = true;
      try {
        const body = await cpuProfile(seconds);
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-disposition': 'attachment; filename="svcd.cpuprofile"',
        });
        res.end(body);
      } finally {
        profiling = false;
      }
      return;
    }
    send(res, 404, 'text/plain', 'not found\n');
  }

  // Idle keep-alive connections would hold close() open: they go at once.
  const close = (s: http.Server) => {
    const closed = closeServer(s);
    s.closeAllConnections();
    return closed;
  };

  return {
    /** Open, move or close the listener; throws a HostInputError when the address cannot be bound. */
    async setAddress(next: string | undefined): Promise<void> {
      const want = next || undefined;
      if (want === address) return;
      const old = server;
      let fresh: http.Server | undefined;
      if (want) {
        const { host, port } = parseListenAddress(want);
        if (old && address && parseListenAddress(address).port === port) await close(old);
        fresh = http.createServer((req, res) => {
          handle(req, res).catch((err: unknown) => {
            deps.log.warn({ err }, 'debug listener request failed');
            if (!res.headersSent) send(res, 500, 'text/plain', `${(err as Error).message}\n`);
            else res.destroy();
          });
        });
        try {
          await listen(fresh, { host, port, ipv6Only: false });
        } catch (e) {
          throw new HostInputError(`Cannot listen on ${want} (core.debug_address): ${(e as Error).message}`);
        }
      }
      server = fresh;
      address = want;
      if (old?.listening) await close(old);
      if (server) figures.start();
      else figures.stop();
      deps.log.info(
        { address: want ?? '' },
        want ? 'debug listener ready (no authentication: keep it on loopback)' : 'debug listener closed',
      );
    },
    async close(): Promise<void> {
      await this.setAddress(undefined);
    },
  };
}
export type DebugListener = ReturnType<typeof createDebugListener>;

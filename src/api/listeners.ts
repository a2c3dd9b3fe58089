import { chmod, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import { ValidationError } from '../desired/errors.ts';
import { readProject } from '../desired/projects.ts';
import type { Db } from '../db/types.ts';
import type { EventBus } from '../events/index.ts';
import type { Operations } from '../operations/index.ts';
import { identifyCaller } from './auth.ts';
import type { AppEnv } from './context.ts';
import { errorBody } from './envelope.ts';
import { parseEventTypes, serveEventsSocket } from './events-socket.ts';
import type { TrustStore } from './trust-store.ts';
import { withUiSession } from '../ui/ui-caller.ts';
import type { UiSessions } from '../ui/ui-sessions.ts';

export interface ListenerDeps {
  app: Hono<AppEnv>;
  db: Db;
  bus: EventBus;
  ops: Operations;
  trust: TrustStore;
  /** Dashboard sessions: a browser's event stream is trusted by its session cookie and Origin. */
  uiSessions?: UiSessions;
  log: Logger;
  /** The server certificate, and in PKI mode the CA and CRL that client certificates are verified against. */
  tls: { cert: string; key: string; ca?: string | undefined; crl?: string | undefined };
  pingMs?: number;
  onRequest?: () => void;
  /** An operation's websocket held by another cluster member: tunnelled there (true), or not (false: refused here). */
  forwardUpgrade?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => Promise<boolean>;
  /** Upgrades to other protocols on the HTTPS listener (a cluster member's database tunnel): taken (true) or not. */
  protocolUpgrade?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => Promise<boolean>;
  /** Websockets of the cluster's own on the HTTPS listener (`/internal/cluster/...`): a handler, or a refusal's text. */
  memberSocket?: (req: http.IncomingMessage, url: URL) => ((ws: WebSocket) => void) | string | undefined;
}

/** Listen, resolving once bound and rejecting with the bind error (EADDRINUSE, EACCES...). */
export function listen(server: net.Server, ...args: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    (server.listen as (...a: unknown[]) => void)(...args, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

export const closeServer = (s: net.Server) => new Promise<void>((resolve) => s.close(() => resolve()));

/** Parse a validated `core.https_address` into host + port (default port 8443, all addresses when host empty). */
export function parseListenAddress(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*))(?::(\d+))?$/.exec(addr);
  const host = m?.[1] ?? m?.[2] ?? '';
  return { host: host === '' ? '::' : host, port: m?.[3] ? Number(m[3]) : 8443 };
}

/**
 * The unix socket and HTTPS listeners, both serving the hono app and websocket upgrades
 * (events, operation websockets). HTTPS can be opened, moved and closed live.
 */
export function createListeners(initial: ListenerDeps): Listeners {
  /** What requests are served with: replaced as a whole when the agent restarts inside these listeners (rebind). */
  let deps = initial;
  /** While the agent restarts, requests and upgrades wait here (the sockets stay bound: nothing is refused). */
  let paused: { promise: Promise<void>; resume: () => void } | undefined;
  let pending: ListenerDeps | undefined;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  let unixServer: http.Server | undefined;
  let httpsServer: https.Server | undefined;
  let httpsAddress: string | undefined;
  const sockets = new Set<net.Socket>();

  const handlerFor = (listener: 'unix' | 'https') => {
    const requestListener = getRequestListener((req, env) => deps.app.fetch(req, { ...env, listener }));
    return (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (paused) return void paused.promise.then(() => requestListener(req, res));
      deps.onRequest?.();
      return requestListener(req, res);
    };
  };

  function refuse(socket: Duplex, status: number, message: string) {
    const body = JSON.stringify(errorBody(status, message));
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  const onUpgrade = (listener: 'unix' | 'https') => async (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    if (paused) await paused.promise;
    try {
      if (listener === 'https' && req.headers.upgrade?.toLowerCase() !== 'websocket')
        if (await deps.protocolUpgrade?.(req, socket, head)) return;
      const url = new URL(req.url ?? '/', 'http://svcd');
      const certCaller = await identifyCaller(req, listener, deps.trust);
      const header = (n: string) => {
        const v = req.headers[n];
        return Array.isArray(v) ? v[0] : v;
      };
      const caller = deps.uiSessions
        ? await withUiSession(certCaller, header, deps.uiSessions, 'websocket')
        : certCaller;
      const opMatch = /^\/1\.0\/operations\/([^/]+)\/websocket$/.exec(url.pathname);
      if (opMatch) {
        const claim = deps.ops.websockets.claim(decodeURIComponent(opMatch[1]!), url.searchParams.get('secret') ?? '');
        if (!claim && (await deps.forwardUpgrade?.(req, socket, head))) return;
        if (!claim) return refuse(socket, 403, 'not authorized: wrong or already used websocket secret');
        return wss.handleUpgrade(req, socket, head, (ws: WebSocket) => claim.attach(ws));
      }
      const member = listener === 'https' ? deps.memberSocket?.(req, url) : undefined;
      if (typeof member === 'string') return refuse(socket, 403, member);
      if (member) return wss.handleUpgrade(req, socket, head, member);
      if (url.pathname === '/1.0/events') {
        if (caller.level !== 'trusted') return refuse(socket, 403, 'not authorized');
        const types = parseEventTypes(url.searchParams.get('type'));
        if (typeof types === 'string') return refuse(socket, 400, types);
        const project = url.searchParams.get('project') || undefined;
        if (project && !(await readProject(deps.db, project).catch(() => undefined)))
          return refuse(socket, 404, 'Project not found');
        return wss.handleUpgrade(req, socket, head, (ws: WebSocket) =>
          serveEventsSocket(ws, { bus: deps.bus, types, project, pingMs: deps.pingMs ?? 15_000 }),
        );
      }
      return refuse(socket, 404, 'not found');
    } catch (e) {
      deps.log.error({ err: e, url: req.url }, 'websocket upgrade failed');
      refuse(socket, 500, 'Internal server error');
    }
  };

  function configure(server: http.Server | https.Server, listener: 'unix' | 'https') {
    // Slow or silent clients never hold others up (the event loop serves every socket), and they
    // are cut after 30 s without complete headers. Bodies may be large uploads: no overall timeout.
    server.headersTimeout = 30_000;
    server.requestTimeout = 0;
    server.keepAliveTimeout = 30_000;
    server.on('upgrade', onUpgrade(listener));
    server.on('connection', (s: net.Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.on('clientError', (_err, socket) => {
      if (socket.writable) refuse(socket, 400, 'Bad request');
      else socket.destroy();
    });
  }

  return {
    /** Hold new requests and upgrades until rebind (the agent behind these listeners is being replaced). */
    pause(): void {
      if (paused) return;
      let resume!: () => void;
      const promise = new Promise<void>((r) => (resume = r));
      paused = { promise, resume };
      // Event streams and operation websockets belong to the agent that goes: their clients reconnect.
      for (const ws of wss.clients) ws.close(1012, 'service restart');
    },

    /** Serve with a new agent's parts from now on, and let the held requests through. */
    rebind(next: ListenerDeps): void {
      const certChanged = next.tls.cert !== deps.tls.cert;
      deps = next;
      if (certChanged) this.setCertificate(next.tls);
      const held = paused;
      paused = undefined;
      held?.resume();
    },

    /**
     * A restarted agent's parts, served from its listenUnix on (the point where a fresh start would open the
     * socket: after its pools and networks' first pass), so requests wait rather than meet a half-started agent.
     */
    adopt(next: ListenerDeps): Listeners {
      pending = next;
      return this as Listeners;
    },

    async listenUnix(path: string): Promise<void> {
      if (pending && unixServer?.listening) {
        const next = pending;
        pending = undefined;
        return this.rebind(next);
      }
      await assertUnixFree(path);
      await rm(path, { force: true });
      unixServer = http.createServer(handlerFor('unix'));
      configure(unixServer, 'unix');
      await listen(unixServer, path);
      await chmod(path, 0o660);
    },

    async setHttpsAddress(address: string | undefined): Promise<void> {
      const next = address || undefined;
      if (next === httpsAddress) return;
      const old = httpsServer;
      let fresh: https.Server | undefined;
      if (next) {
        // Unverified certificates are let through (an untrusted caller may add its own with the trust
        // password); in PKI mode the CA is also named in the certificate request, so LXD's clients send
        // only a certificate it issued, and `socket.authorized` tells the CA's and the CRL's verdict.
        const { cert, key, ca, crl } = deps.tls;
        const pki = ca ? { ca, ...(crl ? { crl } : {}) } : {};
        fresh = https.createServer(
          { cert, key, ...pki, requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' },
          handlerFor('https'),
        );
        configure(fresh, 'https');
        const { host, port } = parseListenAddress(next);
        // Moving to the same port on another address: release the old one first.
        if (old && httpsAddress && parseListenAddress(httpsAddress).port === port) await closeServer(old);
        try {
          await listen(fresh, { host, port, ipv6Only: false });
        } catch (e) {
          throw new ValidationError(`Cannot listen on ${next}: ${(e as Error).message}`);
        }
      }
      httpsServer = fresh;
      httpsAddress = next;
      if (old?.listening) await closeServer(old);
      deps.log.info({ address: next ?? '' }, next ? 'HTTPS listener ready' : 'HTTPS listener closed');
    },

    /** Present another certificate (the cluster's, after a join) on the listener now and on any opened later. */
    setCertificate(c: { cert: string; key: string }): void {
      deps.tls = { ...deps.tls, cert: c.cert, key: c.key };
      const { ca, crl } = deps.tls;
      httpsServer?.setSecureContext({ cert: c.cert, key: c.key, ...(ca ? { ca, ...(crl ? { crl } : {}) } : {}) });
    },

    /** host:port strings where the HTTPS API can be reached. */
    addresses(): string[] {
      if (!httpsServer || !httpsAddress) return [];
      const { host, port } = parseListenAddress(httpsAddress);
      if (host !== '::' && host !== '0.0.0.0') return [host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`];
      const out: string[] = [];
      for (const list of Object.values(os.networkInterfaces()))
        for (const a of list ?? []) {
          if (a.internal || (a.family === 'IPv6' && a.address.startsWith('fe80'))) continue;
          out.push(a.family === 'IPv6' ? `[${a.address}]:${port}` : `${a.address}:${port}`);
        }
      return out;
    },

    async close(): Promise<void> {
      for (const ws of wss.clients) ws.terminate();
      const servers = [unixServer, httpsServer].filter((s): s is http.Server => !!s?.listening);
      const closing = servers.map(closeServer);
      for (const s of sockets) s.destroy();
      await Promise.all(closing);
      httpsServer = undefined;
      httpsAddress = undefined;
    },
  };
}
export interface Listeners {
  pause(): void;
  rebind(next: ListenerDeps): void;
  adopt(next: ListenerDeps): Listeners;
  listenUnix(path: string): Promise<void>;
  setHttpsAddress(address: string | undefined): Promise<void>;
  setCertificate(c: { cert: string; key: string }): void;
  addresses(): string[];
  close(): Promise<void>;
}

/** A live socket at `path` means another daemon owns this state directory: refused. */
export async function assertUnixFree(path: string): Promise<void> {
  const live = await new Promise<boolean>((resolve) => {
    const probe = net.connect(path);
    probe.once('connect', () => (probe.destroy(), resolve(true)));
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`another svcd is already serving ${path}`);
}

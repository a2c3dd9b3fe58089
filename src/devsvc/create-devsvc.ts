import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir, rm, unlink } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Db } from '../db/types.ts';
import type { EventBus } from '../events/index.ts';
import { TerminalError } from '../reconcilers/runtime/index.ts';
import { createDevsvcApp, type GuestState } from './create-devsvc-app.ts';
import {
  devsvcEnabled,
  guestChanges,
  parseGuestEventTypes,
  type GuestChange,
  type GuestEventType,
  type GuestView,
} from './guest-view.ts';
import { DEVSVC_SOCKET } from './paths.ts';
import { readGuest, type Guest } from './read-guest.ts';
import { devsvcDirOf, devsvcRootOf, stateTrashOf } from '../host/layout.ts';
import { createTrash, type Trash } from '../host/storage/trash.ts';

/** Longest unix socket path (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;
/** Connections one guest may hold open at once (events websockets included). */
const MAX_CONNECTIONS = 64;
/** Most a slow events client may lag behind before it is dropped. */
const MAX_BUFFERED = 8 * 1024 * 1024;

export interface Devsvc {
  /**
   * Converge one container's guest socket with its desired state: listening while it is desired up
   * and `security.devsvc` is on, closed otherwise; and tell its events subscribers what changed in
   * its `user.*` config and devices since the last look. Idempotent (level, not edge).
   */
  sync(id: string, current?: Guest): Promise<void>;
  /** The container is removed: close its socket and remove its directory. */
  remove(id: string): Promise<void>;
  /** Daemon stop: close every socket (they come back at the next start's sync). */
  close(): Promise<void>;
}

interface Listener {
  server: http.Server;
  connections: Set<net.Socket>;
  subscribers: Map<WebSocket, Set<GuestEventType>>;
  view: GuestView;
  state: GuestState;
}

export interface DevsvcDeps {
  db: Db;
  stateDir: string;
  node: string;
  bus: EventBus;
  log: Logger;
  pingMs?: number;
  /** Where a removed container's directory goes (`<stateDir>/trash`), removed in the background (default: a trash of its own). */
  trash?: Trash;
}

/**
 * devsvc, the guest-facing local interface: one unix socket per running container, in a host
 * directory bind-mounted at /dev/svc and /dev/lxd inside it (see ensureLxcConfig). Which socket a
 * request came in on tells whose it is: no credentials, no lookup of the peer.
 */
export function createDevsvc(deps: DevsvcDeps): Devsvc {
  const listeners = new Map<string, Listener>();
  const trash = deps.trash ?? createTrash();
  /** One sync at a time per container (the reconciler and profile updates may both ask). */
  const chains = new Map<string, Promise<void>>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  /** Set by close(): a sync still queued (a profile event) must not open a socket again. */
  let closed = false;
  const log = deps.log.child({ component: 'devsvc' });
  const app = createDevsvcApp({
    db: deps.db,
    node: deps.node,
    stateDir: deps.stateDir,
    log,
    guestState: {
      get: (id) => listeners.get(id)?.state ?? 'Started',
      set: (id, s) => {
        const l = listeners.get(id);
        if (l) l.state = s;
      },
    },
  });

  function serialized(id: string, f: () => Promise<void>): Promise<void> {
    const next = (chains.get(id) ?? Promise.resolve()).catch(() => {}).then(f);
    chains.set(id, next);
    void next
      .finally(() => {
        if (chains.get(id) === next) chains.delete(id);
      })
      .catch(() => {});
    return next;
  }

  function refuse(socket: Duplex, status: number, message: string) {
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`,
    );
  }

  function subscribe(l: Listener, ws: WebSocket, types: Set<GuestEventType>) {
    l.subscribers.set(ws, types);
    let alive = true;
    const ping = setInterval(() => {
      if (!alive) return ws.terminate();
      alive = false;
      ws.ping();
    }, deps.pingMs ?? 15_000);
    ping.unref();
    ws.on('pong', () => (alive = true));
    ws.on('message', () => (alive = true));
    const done = () => {
      clearInterval(ping);
      l.subscribers.delete(ws);
    };
    ws.on('close', done);
    ws.on('error', done);
  }

  function publish(l: Listener, changes: GuestChange[]) {
    const timestamp = new Date().toISOString();
    for (const ch of changes) {
      const text = JSON.stringify({ timestamp, type: ch.type, metadata: ch.metadata });
      for (const [ws, types] of l.subscribers) {
        if (!types.has(ch.type) || ws.readyState !== ws.OPEN) continue;
        if (ws.bufferedAmount > MAX_BUFFERED) ws.terminate();
        else ws.send(text);
      }
    }
  }

  async function open(id: string, view: GuestView): Promise<Listener> {
    const dir = devsvcDirOf(deps.stateDir, id);
    const sock = path.join(dir, DEVSVC_SOCKET);
    if (Buffer.byteLength(sock) > MAX_SOCKET_PATH)
      throw new TerminalError(
        `devsvc: the socket path ${sock} is longer than ${MAX_SOCKET_PATH} bytes (use a shorter state directory, or set security.devsvc=false)`,
      );
    // The container's root (a high host uid when unprivileged) must reach the socket: traversable dirs, a 0666 socket (as LXD's).
    // Looked at first: at a boot every start opens one, and finds both there already.
    const root = devsvcRootOf(deps.stateDir);
    if (!existsSync(root)) await mkdir(root, { recursive: true, mode: 0o711 });
    const st = statSync(dir, { throwIfNoEntry: false });
    if (!st) await mkdir(dir, { recursive: true, mode: 0o755 });
    if ((st?.mode ?? 0) % 0o1000 !== 0o755) await chmod(dir, 0o755);
    // A socket left by an earlier run (one file: no recursive removal, and no error built when there is none).
    if (existsSync(sock)) await unlink(sock).catch(() => {});
    const handle = getRequestListener((req, env) => app.fetch(req, { ...env, containerId: id }));
    const server = http.createServer(handle);
    const l: Listener = { server, connections: new Set(), subscribers: new Map(), view, state: 'Started' };
    server.headersTimeout = 30_000;
    server.requestTimeout = 60_000;
    // One guest cannot use up the daemon's file descriptors.
    server.maxConnections = MAX_CONNECTIONS;
    server.on('connection', (s: net.Socket) => {
      l.connections.add(s);
      s.on('close', () => l.connections.delete(s));
    });
    server.on('clientError', (_e, s) => (s.writable ? refuse(s, 400, 'bad request') : s.destroy()));
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => {});
      const url = new URL(req.url ?? '/', 'http://devsvc');
      if (url.pathname !== '/1.0/events') return refuse(socket, 404, 'not found');
      const types = parseGuestEventTypes(url.searchParams.get('type'));
      if (typeof types === 'string') return refuse(socket, 400, types);
      // As every request: refused once security.devsvc is off, even before the socket is closed.
      readGuest(deps.db, id).then(
        (g) => {
          if (!g || !devsvcEnabled(g.config) || listeners.get(id) !== l) return refuse(socket, 403, 'not authorized');
          wss.handleUpgrade(req, socket, head, (ws) => subscribe(l, ws, types));
        },
        (err: unknown) => {
          log.error({ err, container: id }, 'devsvc events upgrade failed');
          refuse(socket, 500, 'internal server error');
        },
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(sock, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await chmod(sock, 0o666);
    listeners.set(id, l);
    log.debug({ container: id, socket: sock }, 'devsvc socket listening');
    return l;
  }

  async function shut(id: string): Promise<void> {
    const l = listeners.get(id);
    if (!l) return;
    listeners.delete(id);
    for (const ws of l.subscribers.keys()) ws.close(1001, 'devsvc closed');
    const ended = new Promise<void>((resolve) => l.server.close(() => resolve()));
    for (const s of l.connections) s.destroy();
    await ended;
    await rm(path.join(devsvcDirOf(deps.stateDir, id), DEVSVC_SOCKET), { force: true });
    log.debug({ container: id }, 'devsvc socket closed');
  }

  /** `current`: the container as the caller (its reconcile) has just read it, else read here. */
  const sync = (id: string, current?: Guest) =>
    serialized(id, async () => {
      const g = closed ? undefined : (current ?? (await readGuest(deps.db, id)));
      if (!g || g.row.power === 'stopped' || !devsvcEnabled(g.config)) return shut(id);
      const view = { config: g.config, devices: g.devices };
      const l = listeners.get(id);
      if (!l) {
        await open(id, view);
        return;
      }
      const changes = guestChanges(l.view, view);
      l.view = view;
      if (changes.length) publish(l, changes);
    });

  // A profile change reaches every container using it without a reconcile of theirs: look again.
  const unsubscribe = deps.bus.subscribe({ types: new Set(['lifecycle']) }, (e) => {
    if (e.metadata.action !== 'profile-updated') return;
    for (const id of listeners.keys())
      void sync(id).catch((err: unknown) =>
        log.warn({ err, container: id }, 'devsvc: cannot look at the container again'),
      );
  });

  return {
    sync,
    remove: (id) =>
      serialized(id, async () => {
        await shut(id);
        await trash.discard(devsvcDirOf(deps.stateDir, id), stateTrashOf(deps.stateDir));
      }),
    async close() {
      closed = true;
      unsubscribe();
      await Promise.all([...listeners.keys()].map((id) => serialized(id, () => shut(id)).catch(() => {})));
      wss.close();
    },
  };
}

import type { WebSocket } from 'ws';
import { EVENT_TYPES, type EventBus, type EventType } from '../events/index.ts';

/** Parse `?type=operation,logging`; empty = all types. Returns an error text for unknown types. */
export function parseEventTypes(raw: string | null): Set<EventType> | string {
  if (!raw) return new Set(EVENT_TYPES);
  const out = new Set<EventType>();
  for (const t of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(EVENT_TYPES as readonly string[]).includes(t))
      return `Unknown event type "${t}" (use ${EVENT_TYPES.join(', ')})`;
    out.add(t as EventType);
  }
  return out.size ? out : new Set(EVENT_TYPES);
}

/** Most a slow client may lag behind before it is dropped (instead of losing events silently). */
const MAX_BUFFERED = 32 * 1024 * 1024;

/**
 * Serve one events websocket: every matching event in order; a ping every `pingMs`, and a client
 * that did not answer the previous ping is dropped.
 */
export function serveEventsSocket(
  ws: WebSocket,
  opts: { bus: EventBus; types: Set<EventType>; project?: string | undefined; pingMs: number },
) {
  let alive = true;
  const unsubscribe = opts.bus.subscribe({ types: opts.types, project: opts.project }, (event) => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED) {
      ws.terminate();
      return;
    }
    const { project, ...rest } = event;
    ws.send(JSON.stringify(project === undefined ? rest : { ...rest, project }));
  });
  const ping = setInterval(() => {
    if (!alive) {
      ws.terminate();
      return;
    }
    alive = false;
    ws.ping();
  }, opts.pingMs);
  ping.unref();
  ws.on('pong', () => {
    alive = true;
  });
  // Clients send nothing meaningful on this socket; any message counts as a sign of life.
  ws.on('message', () => {
    alive = true;
  });
  const close = () => {
    clearInterval(ping);
    unsubscribe();
  };
  ws.on('close', close);
  ws.on('error', close);
}

/** The event stream (/1.0/events), reconnected after a second when it drops. */
export interface DaemonEvent {
  type: string;
  timestamp: string;
  metadata: unknown;
}

type Listener = (ev: DaemonEvent) => void;
const listeners = new Set<Listener>();
const statusListeners = new Set<(connected: boolean) => void>();
let socket: WebSocket | undefined;
let connected = false;

function connect(): void {
  const url = `wss://${location.host}/1.0/events?type=lifecycle,operation`;
  socket = new WebSocket(url);
  socket.onopen = () => setConnected(true);
  socket.onmessage = (m) => {
    let ev: DaemonEvent;
    try {
      ev = JSON.parse(String(m.data));
    } catch {
      return;
    }
    if (ev.type === 'operation') remember(ev.metadata as Operation);
    for (const l of listeners) l(ev);
  };
  socket.onclose = () => {
    setConnected(false);
    setTimeout(connect, 1000);
  };
}

function setConnected(v: boolean) {
  connected = v;
  for (const l of statusListeners) l(v);
}

export function onEvent(l: Listener): () => void {
  if (!socket) connect();
  listeners.add(l);
  return () => listeners.delete(l);
}

export function onConnection(l: (connected: boolean) => void): () => void {
  statusListeners.add(l);
  l(connected);
  return () => statusListeners.delete(l);
}

export interface Operation {
  id: string;
  class: string;
  description: string;
  status: string;
  err: string;
  created_at: string;
  updated_at: string;
  resources: Record<string, string[] | null> | null;
}

/**
 * Operations as the event stream told of them since the dashboard opened, latest state of each: the API
 * lists only the running ones, so finished ones (and their errors) are kept here.
 */
const seenOperations = new Map<string, Operation>();
const KEEP_OPERATIONS = 500;

function remember(op: Operation | undefined): void {
  if (!op?.id) return;
  seenOperations.delete(op.id);
  seenOperations.set(op.id, op);
  if (seenOperations.size > KEEP_OPERATIONS) seenOperations.delete(seenOperations.keys().next().value!);
}

/** The remembered operations and the API's running ones, newest first (the API's answer wins for one it lists). */
export function operationsWith(running: Operation[]): Operation[] {
  const all = new Map(seenOperations);
  for (const op of running) all.set(op.id, op);
  return [...all.values()].sort((a, b) => b.created_at.localeCompare(a.created_at));
}

/** Start listening (the App does at its start, so operations are remembered whatever page shows). */
export function followOperations(): void {
  if (!socket) connect();
}

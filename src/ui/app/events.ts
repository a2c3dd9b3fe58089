import { mergeOperations } from '../view/operations.ts';

/** The event stream (/1.0/events), reconnected after a second when it drops. */
export interface DaemonEvent {
  type: string;
  /** The project the event is about; none for server-wide ones. */
  project?: string;
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
    if (ev.type === 'operation') remember(ev.metadata as Operation, ev.project);
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
 * Operations as the event stream told of them since the dashboard opened, latest state of each, with
 * their project: they update the lists (the daemon's history, GET /ui/api/operations) between two reads.
 */
const seenOperations = new Map<string, { op: Operation; project: string }>();
const KEEP_OPERATIONS = 500;

function remember(op: Operation | undefined, project = 'default'): void {
  if (!op?.id) return;
  seenOperations.delete(op.id);
  seenOperations.set(op.id, { op, project });
  if (seenOperations.size > KEEP_OPERATIONS) seenOperations.delete(seenOperations.keys().next().value!);
}

/** The daemon's list and the operations of `project` the stream told of since, newest first. */
export function operationsWith(listed: Operation[], project: string, keep: (op: Operation) => boolean = () => true) {
  const seen = [...seenOperations.values()].filter((s) => s.project === project && keep(s.op)).map((s) => s.op);
  return mergeOperations(listed, seen);
}

/** Start listening (the App does at its start, so operations are remembered whatever page shows). */
export function followOperations(): void {
  if (!socket) connect();
}

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

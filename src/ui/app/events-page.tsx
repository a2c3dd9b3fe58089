import { useEffect, useState } from 'preact/hooks';
import { type DaemonEvent, onEvent } from './events.ts';
import { Table } from './table.tsx';

const KEEP = 200;
const recent: (DaemonEvent & { seq: number })[] = [];
let seq = 0;
let following = false;

/** Keep the recent events from the dashboard's start (App calls it), not only while this page shows. */
export function followEvents(): void {
  if (following) return;
  following = true;
  onEvent((ev) => {
    recent.unshift({ ...ev, seq: ++seq });
    recent.length = Math.min(recent.length, KEEP);
  });
}

function summary(ev: DaemonEvent): string {
  const m = (ev.metadata ?? {}) as {
    action?: string;
    source?: string;
    description?: string;
    status?: string;
    err?: string;
  };
  if (ev.type === 'lifecycle') return `${m.action ?? ''} ${m.source ?? ''}`.trim();
  if (ev.type === 'operation') return `${m.description ?? ''}: ${m.status ?? ''}${m.err ? ` (${m.err})` : ''}`;
  return JSON.stringify(ev.metadata).slice(0, 200);
}

/** The event stream as it arrives (from when the dashboard opened), newest first. */
export function EventsPage() {
  const [, setN] = useState(0);
  useEffect(() => {
    followEvents();
    return onEvent(() => setN((n) => n + 1));
  }, []);
  return (
    <section>
      <h1>Events</h1>
      <p>The last {KEEP} lifecycle and operation events since this page was opened, newest first.</p>
      <Table
        caption="Events"
        head={['Time', 'Type', 'What']}
        rows={recent.map((e) => ({ key: String(e.seq), cells: [e.timestamp, e.type, summary(e)] }))}
        empty="No events yet."
      />
    </section>
  );
}

import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { WebSocket } from 'ws';
import { fingerprintOfDer } from '../desired/certificates.ts';
import type { EventBus, SvcEvent } from '../events/index.ts';

/** The websocket other members relay this member's events from (event-relay.ts). */
export const MEMBER_EVENTS_PATH = '/internal/cluster/events';

/** One message on the member events socket: an event with its place in the journal, or (no event) where it stands. */
export interface JournalMessage {
  epoch: string;
  seq: number;
  event?: SvcEvent;
}

interface Entry {
  seq: number;
  at: number;
  event: SvcEvent;
}

/**
 * What this member itself emitted lately (operation and lifecycle events), numbered, so a member that lost
 * its connection to this one replays what it missed when it reconnects (PostgreSQL notifications are not
 * kept, and neither are websocket messages sent while nobody listened). One journal per process: its
 * `epoch` changes when svcd restarts, and a member reconnecting with another epoch is sent all this process
 * kept. Bounded by count and age: a member away longer is told where the journal stands and goes on from there.
 */
export function createEventJournal(deps: {
  bus: EventBus;
  node: string;
  max?: number;
  keepMs?: number;
  now?: () => number;
}) {
  const max = deps.max ?? 10_000;
  const keepMs = deps.keepMs ?? 10 * 60_000;
  const now = deps.now ?? Date.now;
  const epoch = randomUUID();
  const entries: Entry[] = [];
  let seq = 0;
  const followers = new Set<(m: JournalMessage) => void>();

  deps.bus.subscribe({ types: new Set(['operation', 'lifecycle']) }, (event) => {
    if (event.location !== deps.node) return;
    const e = { seq: ++seq, at: now(), event };
    entries.push(e);
    while (entries.length > max || (entries.length && entries[0]!.at < e.at - keepMs)) entries.shift();
    for (const f of followers) f({ epoch, seq: e.seq, event });
  });

  /** What a follower that last saw `after` (`epoch:seq`, none: nothing to replay) missed. */
  function missed(after: string | null): Entry[] {
    if (!after) return [];
    const [ep, n] = after.split(':');
    if (ep !== epoch) return [...entries];
    const from = Number(n);
    if (!Number.isInteger(from) || from < 0) return [];
    return entries.filter((e) => e.seq > from);
  }

  return {
    epoch,
    /**
     * The member events socket's handler for a caller presenting the cluster certificate itself (else a
     * refusal's text): what was missed since `?after=`, then where the journal stands, then live.
     */
    serve(
      req: http.IncomingMessage,
      url: URL,
      clusterFingerprint: string | undefined,
    ): ((ws: WebSocket) => void) | string {
      const peer = (req.socket as TLSSocket).getPeerX509Certificate?.();
      if (!clusterFingerprint || !peer || fingerprintOfDer(peer.raw) !== clusterFingerprint)
        return "not authorized: a member's events are for the other members (the cluster certificate)";
      const after = url.searchParams.get('after');
      return (ws) => {
        const send = (m: JournalMessage) => {
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
        };
        // All at once, in one turn of the event loop: nothing published meanwhile is lost or sent twice.
        // Where the journal stands comes last: a connection lost during the replay resumes after its last event.
        for (const e of missed(after)) send({ epoch, seq: e.seq, event: e.event });
        send({ epoch, seq });
        followers.add(send);
        const ping = setInterval(() => ws.ping(), 15_000).unref();
        const close = () => {
          clearInterval(ping);
          followers.delete(send);
        };
        ws.on('close', close);
        ws.on('error', close);
      };
    },
  };
}

export type EventJournal = ReturnType<typeof createEventJournal>;

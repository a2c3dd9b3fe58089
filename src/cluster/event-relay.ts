import type { TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import { fingerprintOfDer } from '../desired/certificates.ts';
import type { EventBus, SvcEvent } from '../events/index.ts';
import type { ClusterService } from './cluster-service.ts';
import { MEMBER_EVENTS_PATH, type JournalMessage } from './event-journal.ts';

/** How often the set of members listened to is compared with the online members (and a lost one reconnected). */
const RELAY_CHECK_MS = 2_000;

/**
 * Events from every member reach every member's /1.0/events: this member listens to each other online
 * member's journal (event-journal.ts, with the cluster certificate) and publishes on its own bus what that
 * member itself emitted (its `location`), never what it relayed, so no event goes round twice. Where it got
 * to in each member's journal is kept, so a connection lost and made again replays what was missed. A member
 * of an older svcd, without the journal, is listened to on its /1.0/events (no replay).
 */
export function createEventRelay(deps: {
  node: string;
  cluster: Pick<ClusterService, 'certificate' | 'members'>;
  bus: EventBus;
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
  checkMs?: number;
}) {
  const conns = new Map<string, { ws: WebSocket; address: string; open: Promise<void> }>();
  /** Where this member got to in each other member's journal (`epoch:seq`). */
  const cursors = new Map<string, { epoch: string; seq: number }>();
  /** Members that answered 404 for the journal (an older svcd): their /1.0/events. */
  const legacy = new Set<string>();
  /** Members whose loss was logged: logged again only after they were back. */
  const lost = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  function connect(name: string, address: string, cert: { cert: string; key: string; fingerprint: string }) {
    const at = cursors.get(name);
    const url = legacy.has(name)
      ? `wss://${address}/1.0/events?type=operation,lifecycle`
      : `wss://${address}${MEMBER_EVENTS_PATH}${at ? `?after=${encodeURIComponent(`${at.epoch}:${at.seq}`)}` : ''}`;
    const ws = new WebSocket(url, {
      cert: cert.cert,
      key: cert.key,
      rejectUnauthorized: false,
      handshakeTimeout: 3_000,
      headers: { 'x-svcd-forwarded': deps.node },
    });
    const open = new Promise<void>((resolve) => {
      ws.once('open', () => resolve());
      ws.once('close', () => resolve());
    });
    conns.set(name, { ws, address, open });
    ws.once('open', () => {
      if (lost.delete(name)) deps.log.info({ member: name }, 'relaying the events of this member again');
    });
    ws.on('upgrade', (res) => {
      const peer = (res.socket as TLSSocket).getPeerX509Certificate?.();
      if (!peer || fingerprintOfDer(peer.raw) !== cert.fingerprint) ws.terminate();
    });
    ws.on('unexpected-response', (_req, res) => {
      if (res.statusCode === 404 && !legacy.has(name)) legacy.add(name);
      ws.terminate();
    });
    ws.on('message', (data) => {
      let m: JournalMessage & Partial<SvcEvent>;
      try {
        m = JSON.parse(String(data)) as JournalMessage & Partial<SvcEvent>;
      } catch {
        return;
      }
      const ev = legacy.has(name) ? (m as SvcEvent) : m.event;
      if (!legacy.has(name) && typeof m.epoch === 'string' && Number.isInteger(m.seq)) {
        const cur = cursors.get(name);
        cursors.set(name, { epoch: m.epoch, seq: cur?.epoch === m.epoch ? Math.max(cur.seq, m.seq) : m.seq });
      }
      if (!ev || ev.location !== name) return;
      deps.bus.publish(ev);
    });
    const drop = () => {
      if (conns.get(name)?.ws === ws) conns.delete(name);
    };
    ws.on('close', drop);
    ws.on('error', (err) => {
      drop();
      if (lost.has(name)) return;
      lost.add(name);
      deps.log.warn({ err, member: name }, 'lost the events of this member (reconnected when it is back)');
    });
    return open;
  }

  async function check() {
    const cert = deps.cluster.certificate();
    const wanted = cert
      ? (await deps.cluster.members()).filter((m) => m.online && m.name !== deps.node && m.address)
      : [];
    for (const [name, c] of conns)
      if (!wanted.some((m) => m.name === name && m.address === c.address)) {
        conns.delete(name);
        c.ws.terminate();
      }
    for (const m of wanted) if (!conns.has(m.name) && cert) connect(m.name, m.address, cert);
  }

  const loop = () => {
    if (stopped) return;
    check()
      .catch((err: unknown) => deps.log.warn({ err }, 'cannot list the members to relay their events'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, deps.checkMs ?? RELAY_CHECK_MS).unref();
      });
  };
  return {
    start: loop,
    /**
     * Before a request is forwarded to a member: its events are relayed here from then on, so a client
     * waiting on this member's events for the operation it starts there sees it end.
     */
    async ensure(m: { name: string; address: string }): Promise<void> {
      const cert = deps.cluster.certificate();
      if (!cert || stopped || m.name === deps.node) return;
      const c = conns.get(m.name);
      await (c && c.address === m.address ? c.open : connect(m.name, m.address, cert));
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const c of conns.values()) c.ws.terminate();
      conns.clear();
    },
  };
}

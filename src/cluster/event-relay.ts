import type { TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import { fingerprintOfDer } from '../desired/certificates.ts';
import type { EventBus, SvcEvent } from '../events/index.ts';
import type { ClusterService } from './cluster-service.ts';

/** How often the set of members listened to is compared with the online members (and a lost one reconnected). */
const RELAY_CHECK_MS = 2_000;

/**
 * Events from every member reach every member's /1.0/events: this member listens to each other online
 * member's events socket (with the cluster certificate) and publishes on its own bus what that member
 * itself emitted (its `location`), never what it relayed, so no event goes round twice.
 */
export function createEventRelay(deps: {
  node: string;
  cluster: Pick<ClusterService, 'certificate' | 'members'>;
  bus: EventBus;
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
  checkMs?: number;
}) {
  const conns = new Map<string, { ws: WebSocket; address: string }>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  function connect(name: string, address: string, cert: { cert: string; key: string; fingerprint: string }) {
    const ws = new WebSocket(`wss://${address}/1.0/events?type=operation,lifecycle`, {
      cert: cert.cert,
      key: cert.key,
      rejectUnauthorized: false,
      handshakeTimeout: 3_000,
      headers: { 'x-svcd-forwarded': deps.node },
    });
    conns.set(name, { ws, address });
    ws.on('upgrade', (res) => {
      const peer = (res.socket as TLSSocket).getPeerX509Certificate?.();
      if (!peer || fingerprintOfDer(peer.raw) !== cert.fingerprint) ws.terminate();
    });
    ws.on('message', (data) => {
      let ev: SvcEvent;
      try {
        ev = JSON.parse(String(data)) as SvcEvent;
      } catch {
        return;
      }
      if (ev.location !== name) return;
      deps.bus.publish(ev);
    });
    const drop = () => {
      if (conns.get(name)?.ws === ws) conns.delete(name);
    };
    ws.on('close', drop);
    ws.on('error', (err) => {
      drop();
      deps.log.warn({ err, member: name }, 'lost the events of this member (reconnected when it is back)');
    });
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
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const c of conns.values()) c.ws.terminate();
      conns.clear();
    },
  };
}

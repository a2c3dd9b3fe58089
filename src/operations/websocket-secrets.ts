import { randomBytes, timingSafeEqual } from 'node:crypto';

export type SocketHandler<S> = (fd: string, socket: S) => void;

interface Entry<S> {
  secrets: Map<string, { fd: string; used: boolean }>;
  onSocket: SocketHandler<S>;
}

/**
 * Per-operation websocket secrets (`/1.0/operations/<id>/websocket?secret=`).
 * A secret is valid once: a wrong, reused or expired secret is refused.
 */
export function createWebsocketSecrets<S>() {
  const byOp = new Map<string, Entry<S>>();
  return {
    /** Issue one secret per fd name (e.g. `0`, `1`, `2`, `control`); returns fd → secret. */
    register(opId: string, fds: readonly string[], onSocket: SocketHandler<S>): Record<string, string> {
      const secrets = new Map<string, { fd: string; used: boolean }>();
      const out: Record<string, string> = {};
      for (const fd of fds) {
        const secret = randomBytes(32).toString('hex');
        secrets.set(secret, { fd, used: false });
        out[fd] = secret;
      }
      byOp.set(opId, { secrets, onSocket });
      return out;
    },
    /** Claim a secret: returns the fd and the handler to pass the socket to, or undefined. */
    claim(opId: string, secret: string): { fd: string; attach: (socket: S) => void } | undefined {
      const entry = byOp.get(opId);
      if (!entry) return undefined;
      for (const [candidate, slot] of entry.secrets) {
        if (candidate.length !== secret.length) continue;
        if (!timingSafeEqual(Buffer.from(candidate), Buffer.from(secret))) continue;
        if (slot.used) return undefined;
        slot.used = true;
        return { fd: slot.fd, attach: (socket) => entry.onSocket(slot.fd, socket) };
      }
      return undefined;
    },
    /** Forget an operation's secrets (when it ends). */
    revoke(opId: string): void {
      byOp.delete(opId);
    },
    has(opId: string): boolean {
      return byOp.has(opId);
    },
  };
}
export type WebsocketSecrets<S> = ReturnType<typeof createWebsocketSecrets<S>>;

import type { Caller } from '../api/context.ts';
import { apiRequestSafe, cookieValue, SESSION_COOKIE, UI_HEADER, websocketSafe } from './ui-auth.ts';
import type { UiSessions } from './ui-sessions.ts';

type HeaderOf = (name: string) => string | undefined;

/**
 * An HTTPS caller that is not trusted by certificate, but whose request carries a live dashboard session
 * and passes the cross-site checks (ui-auth.ts), is trusted as a client certificate in the trust store
 * would be. Everything else is left as it was: no session, a dead one, or a request another site could
 * have made get no more than a guest.
 */
export async function withUiSession(
  caller: Caller,
  header: HeaderOf,
  sessions: UiSessions,
  kind: 'request' | 'websocket',
): Promise<Caller> {
  if (caller.protocol !== 'tls' || caller.level === 'trusted') return caller;
  const secret = cookieValue(header('cookie'), SESSION_COOKIE);
  if (!secret) return caller;
  const signs = { host: header('host'), origin: header('origin'), secFetchSite: header('sec-fetch-site') };
  const safe = kind === 'websocket' ? websocketSafe(signs) : apiRequestSafe({ ...signs, uiHeader: header(UI_HEADER) });
  if (!safe) return caller;
  const session = await sessions.check(secret);
  return session ? { ...caller, level: 'trusted', uiSession: session.id } : caller;
}

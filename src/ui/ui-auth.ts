/**
 * The dashboard's cookie and its cross-site checks, pure. A browser session is worth a trusted client
 * only on requests a page of another site cannot make: the custom header `X-SVC-UI: 1` (a cross-site
 * page can send it only after a CORS preflight, which svcd does not grant it), and no sign of another
 * origin (Sec-Fetch-Site, Origin). Websockets carry no custom header: their Origin must be this server.
 */
export const SESSION_COOKIE = 'svcd_ui';
export const UI_HEADER = 'x-svc-ui';

export interface RequestSigns {
  host: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
  uiHeader: string | undefined;
}

/** The value of cookie `name` in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const sameOrigin = (origin: string, host: string | undefined) => !!host && origin === `https://${host}`;

/** Whether an API request may use the session cookie. */
export function apiRequestSafe(s: RequestSigns): boolean {
  if (s.uiHeader !== '1') return false;
  if (s.secFetchSite !== undefined && s.secFetchSite !== 'same-origin') return false;
  if (s.origin !== undefined && !sameOrigin(s.origin, s.host)) return false;
  return true;
}

/** Whether a websocket upgrade may use the session cookie: browsers always send Origin on one. */
export function websocketSafe(s: Omit<RequestSigns, 'uiHeader'>): boolean {
  if (s.origin === undefined || !sameOrigin(s.origin, s.host)) return false;
  return s.secFetchSite === undefined || s.secFetchSite === 'same-origin';
}

/** Set-Cookie for a new session: never readable by scripts, sent only over HTTPS and only same-site. */
export function sessionCookie(secret: string, maxAgeSec: number): string {
  return `${SESSION_COOKIE}=${secret}; Path=/; Max-Age=${maxAgeSec}; HttpOnly; Secure; SameSite=Strict`;
}

export const clearedCookie = () => `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict`;

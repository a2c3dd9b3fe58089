import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, gt, lte } from 'drizzle-orm';
import type { Db } from '../db/types.ts';
import { uiLoginTokens, uiSessions, type UiSessionRow } from '../desired/schema/index.ts';

/** A `svcd ui` URL's token is good for one use within this time. */
export const TOKEN_TTL_MS = 5 * 60_000;
/** A browser session lasts this long after its login (the cookie's Max-Age). */
export const SESSION_TTL_MS = 12 * 3_600_000;

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');
const secret = () => randomBytes(32).toString('base64url');
/** Secrets are 43 base64url characters: anything else is refused before a query. */
const wellFormed = (s: string) => /^[A-Za-z0-9_-]{43}$/.test(s);

export interface UiSessionInfo {
  id: string;
  via: string;
  address: string;
  user_agent: string;
  created_at: string;
  expires_at: string;
}

/**
 * The dashboard's logins: one-time tokens (`svcd ui`) turned into browser sessions. Only hashes are
 * stored; redeeming a token deletes it in the same statement that checks it, so two browsers racing
 * with one URL log in at most one of them.
 */
export function createUiSessions({ db, now = () => new Date() }: { db: Db; now?: () => Date }) {
  return {
    async issueToken(): Promise<{ token: string; expiresAt: Date }> {
      const token = secret();
      const expiresAt = new Date(now().getTime() + TOKEN_TTL_MS);
      // Expired tokens go with each new one: the table never grows past what five minutes of `svcd ui` make.
      await db.delete(uiLoginTokens).where(lte(uiLoginTokens.expiresAt, now()));
      await db.insert(uiLoginTokens).values({ tokenHash: hashOf(token), expiresAt });
      return { token, expiresAt };
    },

    /** A session secret for a valid, unused token (which is then used up), else undefined. */
    async redeemToken(
      token: string,
      meta: { address?: string | undefined; userAgent?: string | undefined },
    ): Promise<{ secret: string; maxAgeSec: number } | undefined> {
      if (!wellFormed(token)) return undefined;
      const used = await db
        .delete(uiLoginTokens)
        .where(and(eq(uiLoginTokens.tokenHash, hashOf(token)), gt(uiLoginTokens.expiresAt, now())))
        .returning({ tokenHash: uiLoginTokens.tokenHash });
      if (used.length === 0) return undefined;
      const s = secret();
      await db.insert(uiSessions).values({
        id: randomBytes(6).toString('hex'),
        secretHash: hashOf(s),
        via: 'token',
        address: (meta.address ?? '').slice(0, 64),
        userAgent: (meta.userAgent ?? '').slice(0, 200),
        expiresAt: new Date(now().getTime() + SESSION_TTL_MS),
      });
      return { secret: s, maxAgeSec: SESSION_TTL_MS / 1000 };
    },

    /** The live session a cookie's secret names, or undefined. */
    async check(sessionSecret: string): Promise<{ id: string } | undefined> {
      if (!wellFormed(sessionSecret)) return undefined;
      const [row] = await db
        .select({ id: uiSessions.id })
        .from(uiSessions)
        .where(and(eq(uiSessions.secretHash, hashOf(sessionSecret)), gt(uiSessions.expiresAt, now())));
      return row;
    },

    async list(): Promise<UiSessionInfo[]> {
      await db.delete(uiSessions).where(lte(uiSessions.expiresAt, now()));
      const rows = await db.select().from(uiSessions).orderBy(asc(uiSessions.createdAt));
      return rows.map(render);
    },

    /** End one session (logout), by its secret. */
    async end(sessionSecret: string): Promise<void> {
      if (wellFormed(sessionSecret))
        await db.delete(uiSessions).where(eq(uiSessions.secretHash, hashOf(sessionSecret)));
    },

    /** End every session and unused token; the number of sessions ended. */
    async revokeAll(): Promise<number> {
      await db.delete(uiLoginTokens);
      return (await db.delete(uiSessions).returning({ id: uiSessions.id })).length;
    },
  };
}
export type UiSessions = ReturnType<typeof createUiSessions>;

const render = (r: UiSessionRow): UiSessionInfo => ({
  id: r.id,
  via: r.via,
  address: r.address,
  user_agent: r.userAgent,
  created_at: r.createdAt.toISOString(),
  expires_at: r.expiresAt.toISOString(),
});

import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.ts';

/**
 * The dashboard's one-time login tokens (`svcd ui`) and its browser sessions. Only SHA-256 hashes of the
 * secrets are stored: a copy of the database logs nobody in. One writer module, `ui/ui-sessions.ts`.
 */
export const uiLoginTokens = pgTable('ui_login_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: createdAt(),
});

export const uiSessions = pgTable('ui_sessions', {
  /** The public name of a session (listing, revoking one): not its secret. */
  id: text('id').primaryKey(),
  secretHash: text('secret_hash').notNull().unique(),
  /** How it logged in: `token` (a `svcd ui` URL). */
  via: text('via').notNull().default('token'),
  address: text('address').notNull().default(''),
  userAgent: text('user_agent').notNull().default(''),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: createdAt(),
});
export type UiSessionRow = typeof uiSessions.$inferSelect;

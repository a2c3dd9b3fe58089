import { boolean, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Written only by reconcilers: how far a desired object has converged. One writer module,
 * `desired/reconcile-facts.ts` (the status settler's convergences and failures, the reconcilers' facts,
 * and a pool create's clearing of a former same-named pool's status).
 * `observed_generation` = the desired generation last converged; `last_error` = the latest reconcile error.
 */
export const reconcileStatus = pgTable(
  'reconcile_status',
  {
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    observedGeneration: integer('observed_generation').notNull().default(0),
    lastError: text('last_error').notNull().default(''),
    terminal: boolean('terminal').notNull().default(false),
    /** What the reconciler knows of the host that desired state does not say (e.g. where a volume's data lives). */
    facts: jsonb('facts').$type<Record<string, unknown>>().notNull().default({}),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.key] })],
);
export type ReconcileStatusRow = typeof reconcileStatus.$inferSelect;

/**
 * How far each member converged an object that every member makes on its own host (storage pools and
 * networks), and what it knows of its own host's part: one row per member, so that one member's convergence,
 * error or facts (a bridge's former name, a pool's mount options) never stand for another's. A row also
 * means "this member may have it on its host": a pool or network being deleted keeps its desired row until
 * every member with a row removed its part (desired/member-status.ts, the one writer).
 */
export const memberStatus = pgTable(
  'member_status',
  {
    node: text('node').notNull(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    observedGeneration: integer('observed_generation').notNull().default(0),
    lastError: text('last_error').notNull().default(''),
    terminal: boolean('terminal').notNull().default(false),
    facts: jsonb('facts').$type<Record<string, unknown>>().notNull().default({}),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.kind, t.key, t.node] })],
);
export type MemberStatusRow = typeof memberStatus.$inferSelect;

import { bigint, boolean, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * What the host shows of each pool on each member. Written by the pool observer; the storage-pool reconciler
 * deletes this member's row of a pool it removed, in the transaction that deletes the pool's row (the
 * observer only writes rows of pools it read as present, so it does not bring the row back for long:
 * the next sample no longer lists the pool).
 */
export const poolRuntime = pgTable(
  'pool_runtime',
  {
    node: text('node').notNull(),
    pool: text('pool').notNull(),
    ready: boolean('ready').notNull().default(false),
    problem: text('problem').notNull().default(''),
    spaceUsed: bigint('space_used', { mode: 'number' }).notNull().default(0),
    spaceTotal: bigint('space_total', { mode: 'number' }).notNull().default(0),
    inodesUsed: bigint('inodes_used', { mode: 'number' }).notNull().default(0),
    inodesTotal: bigint('inodes_total', { mode: 'number' }).notNull().default(0),
    observedAt: timestamp('observed_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.node, t.pool] })],
);
export type PoolRuntimeRow = typeof poolRuntime.$inferSelect;

import { bigint, boolean, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** Written only by observers: what the host shows of each pool on each member. */
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

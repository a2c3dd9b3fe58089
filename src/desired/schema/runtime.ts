import { bigint, boolean, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { networks } from './networks.ts';

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

/**
 * What the host shows of each managed network on each member (its bridge up, its dnsmasq running): written
 * by the network observer when it changes, on every member, so that in a cluster a network is Created once
 * every member's host has it, with `locations` the members that do. The row goes with its network.
 */
export const networkRuntime = pgTable(
  'network_runtime',
  {
    node: text('node').notNull(),
    networkId: uuid('network_id')
      .notNull()
      .references(() => networks.id, { onDelete: 'cascade' }),
    ready: boolean('ready').notNull().default(false),
    problem: text('problem').notNull().default(''),
    observedAt: timestamp('observed_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.node, t.networkId] })],
);
export type NetworkRuntimeRow = typeof networkRuntime.$inferSelect;

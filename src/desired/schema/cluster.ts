import { boolean, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.ts';

/**
 * The daemons sharing this database, one row each, keyed by member name (SVCD_NODE_NAME). A daemon
 * writes its own row at start and renews `heartbeatAt` (the database's clock, so members' clocks may
 * differ); `clustered` is set by bootstrap and join. One writer module: `cluster/members.ts`.
 */
export const clusterMembers = pgTable('cluster_members', {
  name: text('name').primaryKey(),
  /** The member's cluster address (host:port of its HTTPS listener); '' until it is clustered. */
  address: text('address').notNull().default(''),
  clustered: boolean('clustered').notNull().default(false),
  roles: jsonb('roles').$type<string[]>().notNull().default([]),
  architecture: text('architecture').notNull().default(''),
  description: text('description').notNull().default(''),
  heartbeatAt: timestamp('heartbeat_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  createdAt: createdAt(),
});
export type ClusterMemberRow = typeof clusterMembers.$inferSelect;

import { boolean, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, generation, stringMap } from './columns.ts';

/**
 * Desired managed networks (type `bridge`). A network is known to the reconciler by its stable `id`
 * (its facts record which bridge it made, so a rename removes the old one); on the host the bridge is
 * named after the network. Delete sets deleting_at; the reconciler removes the row after teardown.
 * `config` is stored resolved: `auto` addresses are replaced by the subnet picked at create.
 *
 * One writer module: `desired/networks.ts`.
 */
export const networks = pgTable(
  'networks',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    type: text('type').notNull().default('bridge'),
    description: text('description').notNull().default(''),
    config: stringMap('config'),
    /** Member-specific keys (bridge.external_interfaces) by member name, given when each member joined. */
    memberConfig: jsonb('member_config').$type<Record<string, Record<string, string>>>().notNull().default({}),
    /**
     * Defined member by member (`POST ?target=`) and not yet created: as storage_pools.pending. Its second
     * writer, desired/network-pending.ts, writes only pending rows and the step that makes one an ordinary network.
     */
    pending: boolean('pending').notNull().default(false),
    generation: generation(),
    createdAt: createdAt(),
    deletingAt: timestamp('deleting_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('networks_name_idx').on(t.name)],
);
export type NetworkRow = typeof networks.$inferSelect;

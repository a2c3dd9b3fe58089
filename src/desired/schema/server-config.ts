import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/**
 * Server settings (`PUT /1.0`). `node` is '' for cluster-wide keys and the member name for
 * member-local keys (core.https_address). Secrets are stored hashed by the writer.
 */
export const serverConfig = pgTable(
  'server_config',
  {
    node: text('node').notNull().default(''),
    key: text('key').notNull(),
    value: text('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.node, t.key] })],
);

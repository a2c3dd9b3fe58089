import { boolean, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { containers } from './containers.ts';

/** Container backups: a tarball under `<state>/backups/<container id>/<backup id>.tar.gz`. */
export const containerBackups = pgTable(
  'container_backups',
  {
    id: uuid('id').primaryKey(),
    containerId: uuid('container_id')
      .notNull()
      .references(() => containers.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    containerOnly: boolean('container_only').notNull().default(false),
    optimizedStorage: boolean('optimized_storage').notNull().default(false),
    compression: text('compression').notNull().default('gzip'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('container_backups_name_idx').on(t.containerId, t.name)],
);
export type ContainerBackupRow = typeof containerBackups.$inferSelect;

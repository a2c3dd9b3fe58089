import { bigint, boolean, foreignKey, index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { stringMap } from './columns.ts';
import { projects } from './projects.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/**
 * Images known in each project (projects without features.images use `default`'s). The files
 * live once per fingerprint under `<stateDir>/images/` (`<fingerprint>`, plus `<fingerprint>.rootfs`
 * when `split`); rows of several projects may share them.
 */
export const images = pgTable(
  'images',
  {
    project: text('project')
      .notNull()
      .references(() => projects.name, { onUpdate: 'cascade', onDelete: 'cascade' }),
    fingerprint: text('fingerprint').notNull(),
    /** Name used on export (X-SVC-filename). */
    filename: text('filename').notNull().default(''),
    size: bigint('size', { mode: 'number' }).notNull(),
    architecture: text('architecture').notNull(),
    /** `container` (the only instance type). */
    type: text('type').notNull().default('container'),
    /** Two files (metadata tarball + rootfs tarball or squashfs) rather than one unified tarball. */
    split: boolean('split').notNull().default(false),
    public: boolean('public').notNull().default(false),
    autoUpdate: boolean('auto_update').notNull().default(false),
    /** Downloaded on demand (instance creation from a remote) rather than asked for. */
    cached: boolean('cached').notNull().default(false),
    properties: stringMap('properties'),
    updateSource: jsonb('update_source').$type<{
      server: string;
      protocol: string;
      certificate: string;
      alias: string;
    } | null>(),
    /** metadata.yaml creation_date. */
    createdAt: ts('created_at').notNull(),
    uploadedAt: ts('uploaded_at').notNull().defaultNow(),
    lastUsedAt: ts('last_used_at'),
    expiresAt: ts('expires_at'),
  },
  (t) => [primaryKey({ columns: [t.project, t.fingerprint] }), index('images_fingerprint_idx').on(t.fingerprint)],
);
export type ImageRow = typeof images.$inferSelect;

/** Aliases name one image of the same (image) project; they go with it. */
export const imageAliases = pgTable(
  'image_aliases',
  {
    project: text('project').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    fingerprint: text('fingerprint').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.project, t.name] }),
    foreignKey({ columns: [t.project, t.fingerprint], foreignColumns: [images.project, images.fingerprint] })
      .onUpdate('cascade')
      .onDelete('cascade'),
  ],
);
export type ImageAliasRow = typeof imageAliases.$inferSelect;

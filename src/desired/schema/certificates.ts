import { pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.ts';

export const certificates = pgTable('certificates', {
  fingerprint: text('fingerprint').primaryKey(),
  type: text('type').notNull().default('client'),
  name: text('name').notNull().default(''),
  certificate: text('certificate').notNull(),
  createdAt: createdAt(),
});
export type CertificateRow = typeof certificates.$inferSelect;

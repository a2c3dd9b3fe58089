import { integer, jsonb, timestamp } from 'drizzle-orm/pg-core';

/** A string→string map stored as jsonb (config keys). */
export const stringMap = (name: string) => jsonb(name).$type<Record<string, string>>().notNull().default({});

/** Devices: device name → properties (each with at least `type`). */
export const deviceMap = (name: string) =>
  jsonb(name).$type<Record<string, Record<string, string>>>().notNull().default({});

/** Every desired row carries a generation, bumped by each desired write. */
export const generation = () => integer('generation').notNull().default(1);

export const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

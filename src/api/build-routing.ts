import type { Hono } from 'hono';

/**
 * Builds the app's routing table now. Hono builds it at its first match: with svcd's few hundred routes that took
 * about 10 ms, paid by the first request after a start, while a boot's first containers were starting. No route can
 * be added after this (hono refuses one).
 */
// biome-ignore lint/suspicious/noExplicitAny: any app, whatever its env
export function buildRoutingNow(app: Hono<any>): void {
  app.router.match('GET', '/');
}

/**
 * libpq's way of naming a unix socket in a URL, for postgres.js: `?host=/var/run/postgresql` (an absolute
 * directory) connects to `<dir>/.s.PGSQL.<port>` whatever host the URL names, e.g.
 * `postgres://svcd:secret@localhost/svcd?host=/var/run/postgresql`. postgres.js reads only the URL's host,
 * so the directory is taken out of the URL and passed as its `host` option. Pure.
 */
export function parsePostgresUrl(url: string): { url: string; host?: string } {
  const u = new URL(url);
  const host = u.searchParams.get('host');
  if (!host?.startsWith('/')) return { url };
  u.searchParams.delete('host');
  return { url: u.toString(), host };
}

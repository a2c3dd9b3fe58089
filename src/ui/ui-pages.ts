/** The dashboard's HTML pages, pure. Neither carries data: the app page loads it through the API. */

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

const head = (title: string, version: string) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="icon" href="/ui/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/app.css?v=${esc(version)}">`;

/** The app: an empty shell the bundle fills. */
export function renderAppPage(version: string): string {
  return `${head('svcd dashboard', version)}
<script type="module" src="/ui/assets/app.js?v=${esc(version)}"></script>
</head>
<body><div id="app"><p>Loading…</p></div></body>
</html>
`;
}

/** Without a session: how to get in. `problem` says why a login URL did not work. */
export function renderLoginPage(version: string, problem?: string): string {
  return `${head('svcd dashboard: log in', version)}
</head>
<body>
<main class="login">
<h1>svcd dashboard</h1>
${problem ? `<p class="problem" role="alert">${esc(problem)}</p>` : ''}
<p>You are not logged in. On the host, run</p>
<pre><code>svcd ui</code></pre>
<p>and open the URL it prints on its last line. The URL works once, for 5 minutes.</p>
<p>A browser that presents a client certificate in svcd's trust store gets in without one.</p>
</main>
</body>
</html>
`;
}

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2b5797"/><path d="M4 5h8v2H4zm0 4h8v2H4z" fill="#fff"/></svg>`;

/** Headers of every dashboard page: nothing from another origin, not framed, the token URL never sent on. */
export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
};

/**
 * Debian's chromium driven by playwright-core, for the dashboard's tests: headless, no network of its
 * own (no component updates, sync or QUIC), a fresh profile (playwright makes one per launch), and each
 * page watched for console errors, page errors and failed or refused requests.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const chromiumAvailable = () => existsSync(CHROMIUM);

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A context that accepts svcd's self-signed certificate; `clientCertificates` for the certificate login. */
export function newContext(browser: Browser, opts: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  return browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1400, height: 900 }, ...opts });
}

const NETWORK_CHANGED = 'net::ERR_NETWORK_CHANGED';

export interface PageProblems {
  /** Console errors, page errors, failed requests and answers ≥ 400, as text. */
  list: string[];
}

/** Record everything that went wrong on `page` (`allow` passes the ones a test asks for itself). */
export function watchPage(page: Page, allow: (url: string) => boolean = () => false): PageProblems {
  const problems: PageProblems = { list: [] };
  page.on('console', (m) => {
    if (m.type() === 'error' && !allow(m.location().url) && !m.text().includes(NETWORK_CHANGED))
      problems.list.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.list.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // A page left (navigation, reload) cancels what it had in flight: not a failure of the server.
    // Chromium also drops what is in flight when the host's addresses change (another test's bridge or veth
    // on this shared machine): not the server's doing either; the dashboard reads again (app/api.ts).
    const error = r.failure()?.errorText;
    if (error !== 'net::ERR_ABORTED' && error !== NETWORK_CHANGED)
      problems.list.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !allow(r.url()))
      problems.list.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

// biome-ignore-all lint/performance/useDomNodeTextContent: these are playwright locators, whose innerText() is the text a user sees
/**
 * Part of the dashboard's browser test (ui-dashboard.test.ts runs these on its daemon and browser): the
 * operations history from the daemon's records, a failed operation made before the page opened shown with
 * its error on the operations page and in its container's history, and the project selector.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BrowserContext } from 'playwright-core';
import { watchPage } from '../support/browser.ts';
import { waitOp } from '../support/container-env.ts';
import { eventually } from '../support/http.ts';
import type { Host } from '../support/two-hosts.ts';

export interface DashboardEnv {
  host(): Host;
  /** A browser context holding a live dashboard session. */
  ctx(): BrowserContext;
}

export function defineHistoryAndProjectTests(env: DashboardEnv): void {
  test('a failed operation made before the page opened: on the operations page and in its container, with its error', async () => {
    const { api, url } = env.host();
    await waitOp(api, await api.post('/1.0/containers', { name: 'ui-hist', source: { type: 'none' } }));
    const page = await env.ctx().newPage();
    const problems = watchPage(page);
    try {
      // A stopped container cannot freeze: the operation ends at once as Failure, with the reason as its err.
      const failed = await waitOp(api, await api.put('/1.0/containers/ui-hist/state', { action: 'freeze' }), 'Failure');
      assert.ok(failed.err, 'the failure has an error text');
      const listed = (await api.get('/1.0/operations')).json.metadata as Record<string, string[]> | string[];
      assert.ok(!JSON.stringify(listed).includes(failed.id), 'the API still lists running operations only');
      const history = (await api.get('/ui/api/operations?container=ui-hist')).json.metadata;
      assert.deepEqual(
        history.map((o: { description: string; status: string }) => `${o.description}: ${o.status}`),
        ['Freezing container: Failure', 'Creating container: Success'],
      );
      assert.equal((await api.get('/ui/api/operations?limit=0')).status, 400);

      await page.goto(`${url}/ui/#/operations`);
      const ops = page.locator('table').filter({ has: page.getByText('Operations, running and recent') });
      const row = ops.locator('tr').filter({ hasText: failed.err });
      await row.waitFor();
      assert.match(await row.innerText(), /Freezing container\s+task\s+Failure\s+\/1\.0\/containers\/ui-hist/);

      await page.goto(`${url}/ui/#/containers/ui-hist`);
      const mine = page.locator('table').filter({ has: page.getByText('Operations on this container') });
      await mine.locator('tr').filter({ hasText: failed.err }).waitFor();
      assert.match(await mine.innerText(), /Freezing container\s+Failure/);
      assert.match(await mine.innerText(), /Creating container\s+Success/, 'its creation, before the page too');
      assert.deepEqual(problems.list, []);
    } finally {
      await page.close();
      await api.delete('/1.0/containers/ui-hist').then((r) => api.get(`${r.json.operation}/wait?timeout=60`));
    }
  });

  test('the project selector: a labelled select of the projects, kept in the URL, applied to the pages', async () => {
    const { api, url } = env.host();
    // Without its own profiles the project's containers use the default project's (and its root disk).
    const made = await api.post('/1.0/projects', { name: 'ui-proj', config: { 'features.profiles': 'false' } });
    assert.equal(made.status, 200, made.text);
    const page = await env.ctx().newPage();
    const problems = watchPage(page);
    try {
      await waitOp(
        api,
        await api.post('/1.0/containers?project=ui-proj', { name: 'ui-proj-only', source: { type: 'none' } }),
      );
      await page.goto(`${url}/ui/`);
      await page.waitForSelector('tr[data-name="ui-run"]');
      const select = page.getByLabel('Project');
      await eventually(async () => (await select.locator('option').allInnerTexts()).includes('ui-proj'), 'listed');
      assert.deepEqual(await select.locator('option').allInnerTexts(), ['default', 'ui-proj']);
      await select.focus();
      assert.equal(await page.evaluate('document.activeElement?.id'), 'project-select', 'reachable by keyboard');
      await select.selectOption('ui-proj');
      await page.waitForSelector('tr[data-name="ui-proj-only"]');
      assert.equal(await page.locator('tr[data-name="ui-run"]').count(), 0, "the default project's are gone");
      assert.match(page.url(), /#\/containers\?project=ui-proj$/);

      // A reload keeps it; the other pages read that project (the busybox image is the default project's).
      await page.reload();
      await page.waitForSelector('tr[data-name="ui-proj-only"]');
      assert.equal(await select.inputValue(), 'ui-proj');
      const nav = page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Images' }).click();
      await page.getByText('No images.').waitFor();
      assert.match(page.url(), /#\/images\?project=ui-proj$/);
      await nav.getByRole('link', { name: 'Containers' }).click();
      await page.getByRole('link', { name: 'ui-proj-only' }).click();
      await page.getByRole('heading', { name: 'ui-proj-only', level: 1 }).waitFor();
      await page.locator('table').filter({ hasText: 'Creating container' }).waitFor();

      await select.selectOption('default');
      await page.waitForSelector('tr[data-name="ui-run"]');
      assert.equal(await page.locator('tr[data-name="ui-proj-only"]').count(), 0);
      assert.match(page.url(), /#\/containers$/);
      assert.deepEqual(problems.list, []);
    } finally {
      await page.close();
      await api
        .delete('/1.0/containers/ui-proj-only?project=ui-proj')
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await api.delete('/1.0/projects/ui-proj').catch(() => {});
    }
  });
}

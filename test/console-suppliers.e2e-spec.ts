/**
 * The console with several suppliers (issue 31) in a real headless Chromium: the dashboard's red
 * banner names the supplier refusing our credentials (and only it), each supplier's state and the
 * reconciliation backlog; the Suppliers page shows every supplier's upstream, wallet and budget from
 * `/health`; the lists offer a supplier filter. Three suppliers, each with a sandbox of its own:
 * `main` (the env one), `second`, and `bad`, whose sandbox takes another secret than the stored one.
 */
import { mkdirSync } from 'node:fs';
import playwright from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { UpstreamMonitor } from '../src/ops/upstream-monitor.service.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../src/suppliers/supplier.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureConsoleBuilt, SHOTS } from './support/console-browser.js';
import { TEST_TOKEN } from './support/test-app.js';
import { waitFor } from './support/wait.js';

declare const sessionStorage: { setItem(k: string, v: string): void };

describe('console with several suppliers (headless Chromium)', () => {
  const suite = useAppSuite({
    suppliers: {
      second: { sandbox: { wallet: { balance: '310.00', currency: 'CNY' } } },
      bad: { sandbox: { apiSecret: 'not-the-stored-one' } },
    },
    workers: false,
    seed: true,
  });
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ensureConsoleBuilt();
    mkdirSync(SHOTS, { recursive: true });
    // every supplier pinged once, as the periodic ping does
    const monitor = suite.app.relay.app.get(UpstreamMonitor);
    const started = monitor.tick();
    await waitFor(() => started.every((n) => monitor.current(n) !== null && !monitor.pinging(n)), Boolean, 'the pings');
    browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
    await context.addInitScript((token) => sessionStorage.setItem('upstream-relay.console.token', token), TEST_TOKEN);
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(() => expect(pageErrors).toEqual([]));

  it('names the supplier refusing our credentials in a red banner on the dashboard, with every supplier and the backlog', async () => {
    await page.goto(`${suite.app.url}/console/#/`);
    const banner = page.getByTestId('auth-failed-banner');
    await banner.waitFor();
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await banner.locator('[data-supplier]').evaluateAll((els) => els.map((e) => e.getAttribute('data-supplier')))).toEqual(['bad']);
    expect(await banner.textContent()).toContain('refuses our credentials');
    expect(await banner.textContent()).toContain('invalid_signature');

    const states = page.getByTestId('supplier-states');
    await states.locator('li[data-supplier=second]').waitFor();
    expect(await states.locator('li[data-supplier=bad] .badge').first().getAttribute('data-value')).toBe('auth_failed');
    expect(await states.locator('li[data-supplier=main] .badge').first().getAttribute('data-value')).toBe('up');
    expect(await states.locator('li[data-supplier=second]').textContent()).toContain('310.00');
    expect(await page.getByTestId('reconcile-backlog').textContent()).toBe('0');
    expect(await page.getByTestId('reconcile-backlog-age').textContent()).toContain('none waiting');
    await page.screenshot({ path: `${SHOTS}dashboard-suppliers.png` });
  });

  it("shows every supplier's upstream, wallet and budget on the Suppliers page", async () => {
    await page.goto(`${suite.app.url}/console/#/suppliers`);
    const table = page.getByTestId('suppliers-table');
    await table.locator('tr[data-supplier=bad]').waitFor();
    expect(await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-supplier')))).toEqual([
      'main',
      'bad',
      'second',
    ]);
    expect(await table.locator('tr[data-supplier=bad]').getAttribute('data-upstream')).toBe('auth_failed');
    expect(await table.locator('tr[data-supplier=bad] [data-field=error]').textContent()).toContain('HTTP 401');
    expect(await table.locator('tr[data-supplier=second] [data-field=wallet]').textContent()).toBe('310.00 CNY');
    expect(await table.locator('tr[data-supplier=main] [data-field=wallet]').textContent()).toBe(`${suite.sandbox.walletBalance()} CNY`);
    expect(await page.getByTestId('auth-failed-banner').locator('[data-supplier]').count()).toBe(1);
    // the supplier's lists, filtered by it
    expect(await table.locator('tr[data-supplier=second] a', { hasText: 'SKUs' }).getAttribute('href')).toBe('#/catalog?supplier=second');
    expect(await table.locator('tr[data-supplier=second] a', { hasText: 'Orders' }).getAttribute('href')).toBe('#/orders?supplier=second');
    await page.screenshot({ path: `${SHOTS}suppliers.png` });
  });

  it('offers a supplier filter and a supplier column on the catalog and orders lists', async () => {
    await page.goto(`${suite.app.url}/console/#/catalog`);
    const filter = page.locator('select[name=supplier]');
    await filter.waitFor();
    expect(await filter.locator('option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).toEqual([
      '',
      'main',
      'bad',
      'second',
    ]);
    await page.getByTestId('skus-table').locator('th', { hasText: 'Supplier' }).waitFor();
    await filter.selectOption('second');
    await page.waitForURL(/#\/catalog\?supplier=second/);
    await page.goto(`${suite.app.url}/console/#/orders`);
    await page.locator('select[name=supplier]').waitFor();
    await page.getByTestId('orders-table').locator('th', { hasText: 'Supplier' }).waitFor();
  });

  it('shows no banner once that supplier accepts our credentials again', async () => {
    // its credentials mended: the secret the operator stores is now the one its sandbox takes
    const repo = suite.app.relay.app.get(SupplierRepository);
    const stored = (await repo.find('bad'))!;
    await repo.update({ ...stored, apiSecret: 'not-the-stored-one' });
    await suite.app.relay.app.get(SupplierRegistry).reload();
    expect((await suite.app.relay.app.get(UpstreamMonitor).pingNow('bad')).status).toBe('up');
    await page.goto(`${suite.app.url}/console/#/`);
    await page.getByTestId('supplier-states').locator('li[data-supplier=bad] .badge[data-value=up]').waitFor();
    expect(await page.getByTestId('auth-failed-banner').count()).toBe(0);
  });
});

/**
 * The console's view of offer orders (issue 32) in a real headless Chromium, against the service with
 * two suppliers and a sandbox each: the order page of a failed-over order shows its offer and its
 * route (one row per attempt: supplier, SKU, outcome, error code), a direct order's page shows no
 * route, and the dashboard shows the failovers by reason as the database recorded them.
 */
import type { Page } from 'playwright-core';
import { useAppSuite } from './support/app-suite.js';
import { ensureConsoleBuilt, openConsole, type ConsoleBrowser } from './support/console-browser.js';
import { waitFor } from './support/wait.js';

const stockRefusal = { kind: 'coded_error' as const, operation: 'createOrder' as const, status: 409, errorCode: 'insufficient_stock' };

describe('console: offer orders (headless Chromium)', () => {
  // Built before the service starts, which serves the console it finds then.
  beforeAll(() => ensureConsoleBuilt(), 180_000);
  const t = useAppSuite({ suppliers: { second: {} }, seed: true });
  let con: ConsoleBrowser;
  let page: Page;
  let key = '';
  let code = '';
  const http = () => t.app.http;
  const place = (body: Record<string, unknown>) => http().post('/internal/orders', { quantity: 1, ...body });

  beforeAll(async () => {
    const product = t.sandbox.catalog
      .listedProducts()
      .find((p) => p.fulfillment_type !== 'manual' && p.skus.some((s) => s.stock_status !== 'out_of_stock'))!;
    code = product.skus.find((s) => s.stock_status !== 'out_of_stock')!.sku_code;
    key = `${product.id}:${code}`;
    const started = await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'second' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      'the second supplier sync',
      60_000,
    );
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    expect((await http().put('/internal/offers/CON-P', { title: 'both', routing: 'priority', sources })).status).toBeLessThan(300);
    con = await openConsole();
    page = con.page;
  }, 180_000);
  afterAll(() => con?.close());
  afterEach(() => expect(con.errors).toEqual([]));

  it("shows a failed-over order's offer and its route, one row per attempt", async () => {
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    expect((await place({ shop_order_no: 'CON-FO-1', offer: 'CON-P' })).status).toBe(201);

    await page.goto(`${t.app.url}/console/#/orders/CON-FO-1`);
    await page.getByRole('heading', { name: 'Order CON-FO-1' }).waitFor();
    expect(await page.locator('[data-field=offer]').textContent()).toBe('CON-P');
    expect(await page.locator('[data-field=offer] a').getAttribute('href')).toBe('#/offers/CON-P');
    const route = page.locator('[data-testid=order-route]');
    await route.waitFor();
    const row = (attempt: number) => route.locator(`tr[data-attempt="${attempt}"]`);
    const cells = async (attempt: number) =>
      Object.fromEntries(
        await Promise.all(
          ['supplier', 'sku_key', 'error_code'].map(async (f) => [
            f,
            (await row(attempt).locator(`[data-field=${f}]`).textContent())?.trim(),
          ]),
        ),
      ) as Record<string, string>;
    expect(await route.locator('tbody tr').count()).toBe(2);
    expect(await cells(1)).toEqual({ supplier: 'main', sku_key: key, error_code: 'insufficient_stock' });
    expect(await row(1).locator('[data-field=outcome] .badge').getAttribute('data-value')).toBe('rejected');
    expect(await cells(2)).toEqual({ supplier: 'second', sku_key: key, error_code: '—' });
    expect(await row(2).locator('[data-field=outcome] .badge').getAttribute('data-value')).toBe('accepted');
  });

  it("shows no route on a direct order's page", async () => {
    expect((await place({ shop_order_no: 'CON-DIRECT-1', sku_code: code, supplier: 'main' })).status).toBe(201);
    await page.goto(`${t.app.url}/console/#/orders/CON-DIRECT-1`);
    await page.getByRole('heading', { name: 'Order CON-DIRECT-1' }).waitFor();
    await page.locator('[data-field=supplier]', { hasText: 'main' }).waitFor();
    expect(await page.locator('[data-testid=order-route]').count()).toBe(0);
    expect(await page.locator('[data-field=offer]').count()).toBe(0);
  });

  it('shows the failovers by reason on the dashboard', async () => {
    t.sandbox.faults.set({
      rules: [{ kind: 'coded_error', operation: 'createOrder', status: 401, errorCode: 'invalid_signature', times: 1 }],
    });
    expect((await place({ shop_order_no: 'CON-FO-2', offer: 'CON-P' })).status).toBe(201);

    await page.goto(`${t.app.url}/console/#/`);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.locator('[data-testid=failover-total]', { hasText: '2' }).waitFor();
    const reasons = page.locator('[data-testid=failover-reasons]');
    expect(await reasons.locator('tr[data-reason=insufficient_stock] [data-field=count]').textContent()).toBe('1');
    expect(await reasons.locator('tr[data-reason=upstream_auth_failed] [data-field=count]').textContent()).toBe('1');
    expect(await reasons.locator('tbody tr').count()).toBe(2);
  });
});

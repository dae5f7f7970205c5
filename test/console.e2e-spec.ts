/**
 * The operator console (issue 6) in a real headless Chromium: served by the service at `/console/`,
 * behind the internal token, fed by the internal API only, against the sandbox upstream. Orders are
 * placed through the internal API here; the console resolves an unknown outcome, cancels a pending
 * order and records its refund, edits a pricing rule, and starts a sync. Each page is saved as a
 * 1280×800 screenshot: to docs/screenshots/ for the README with `UPDATE_SCREENSHOTS=1`, else to the
 * test cache (so that a test run leaves the checkout as it was).
 */
import { mkdirSync } from 'node:fs';
import axios from 'axios';
import playwright from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { compileRule, salePrice } from '../src/catalog/pricing.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureConsoleBuilt, SHOTS } from './support/console-browser.js';
import { TEST_TOKEN, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

// The few browser globals the page functions below use (this file is type-checked without the DOM lib).
interface PageElement {
  textContent: string | null;
}
declare const document: {
  querySelector(s: string): PageElement | null;
  querySelectorAll(s: string): ArrayLike<PageElement> & Iterable<PageElement>;
};
declare const sessionStorage: { setItem(k: string, v: string): void; length: number } & Record<string, string>;

interface OrderBody {
  shop_order_no: string;
  status: string;
  upstream_order_id: number | null;
  items: string[];
  amount: string | null;
  refund_state: string;
  refundable_amount: string | null;
}

interface SkuBody {
  sku_code: string;
  cost_price: string;
  sale_price: string;
  available: boolean;
  fulfillment_type: string;
  stock_status: string;
}

describe('operator console (headless Chromium)', () => {
  // the service serves the console's build: built before the suite starts it
  beforeAll(() => ensureConsoleBuilt(), 120_000);
  const suite = useAppSuite({
    // the operator's resolve by upstream order id is proven by the order's downstream_order_no, which
    // the real upstream's GET /orders/{id} does not show: an upstream that shows it, for that test
    sandbox: { catalog: { products: 12 }, orderDetailShowsDownstreamNo: true },
    env: { ORDER_POLL_BASE_MS: '100', ORDER_POLL_MAX_MS: '500', UPSTREAM_TIMEOUT_MS: '2000', PRICE_MARKUP_PERCENT: '12' },
  });
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let sku: SkuBody;
  const pageErrors: string[] = [];
  const requests: string[] = [];

  const consoleUrl = (hash = '') => `${app.url}/console/${hash}`;
  const order = async (no: string) => (await app.http.get(`/internal/orders/${no}`)).data.order as OrderBody;
  const shot = (name: string) => page.screenshot({ path: `${SHOTS}${name}.png` });
  const place = async (no: string, quantity = 1) => {
    const res = await app.http.post('/internal/orders', { shop_order_no: no, sku_code: sku.sku_code, quantity });
    if (res.status >= 300 && res.status !== 202) throw new Error(`order ${no} not placed: ${res.status} ${JSON.stringify(res.data)}`);
    return res.data.order as OrderBody;
  };
  const syncNow = async () => {
    const started = await app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    const run = await waitFor(
      async () => (await app.http.get(`/internal/catalog/sync-runs/${started.data.run_id}`)).data.run as { status: string },
      (r) => r.status !== 'running',
      'the sync',
    );
    expect(run.status).toBe('succeeded');
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ({ db, sandbox, app } = suite);
    await syncNow();
    const skus = (await app.http.get('/internal/catalog/skus', { params: { available: true, page_size: 500 } })).data.items as SkuBody[];
    sku =
      skus.find((s) => s.fulfillment_type === 'auto' && s.stock_status === 'unlimited') ?? skus.find((s) => s.fulfillment_type === 'auto')!;
    // A price change upstream, seen by a second sync: the SKU gets a history beyond its creation.
    sandbox.catalog.setPrice(sku.sku_code, (BigInt(sku.cost_price.replace('.', '')) + 100n).toString().replace(/(\d{2})$/, '.$1'));
    await syncNow();
    sku = (await app.http.get(`/internal/catalog/skus/${sku.sku_code}`)).data.sku as SkuBody;

    // Orders, placed through the internal API: two that get delivered, …
    for (const [no, q] of [
      ['shop-1001', 1],
      ['shop-1002', 2],
    ] as const)
      await place(no, q);
    await waitFor(
      () => order('shop-1002'),
      (o) => o.status === 'delivered' && o.items.length > 0,
      'shop-1002 delivered',
    );
    await waitFor(
      () => order('shop-1001'),
      (o) => o.status === 'delivered',
      'shop-1001 delivered',
    );
    // … one whose outcome is unknown (the upstream creates it, then answers 500), …
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', times: 1 }] });
    expect((await place('shop-1003')).status).toBe('submit_unknown');
    // … and one that stays unpaid upstream.
    sandbox.setTimetable({ paidMs: null });
    expect((await place('shop-1004')).status).toBe('pending_payment');

    browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) pageErrors.push(m.text());
    });
    page.on('request', (r) => requests.push(r.url()));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(() => {
    // No script error, no CSP violation, and nothing fetched from anywhere but the service.
    expect(pageErrors).toEqual([]);
    const origin = app.url;
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
  });

  it('serves the HTML shell without a token, its own files only, and keeps the data behind the token', async () => {
    const shell = await axios.get(`${app.url}/console/`, { validateStatus: () => true });
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toMatch(/^text\/html/);
    expect(shell.headers['content-security-policy']).toContain("default-src 'self'");
    expect(shell.headers['cache-control']).toBe('no-cache');
    expect(shell.data).toContain('<div id="app">');
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(shell.data as string)![1];
    const js = await axios.get(`${app.url}${asset}`, { validateStatus: () => true, decompress: true });
    expect(js.status).toBe(200);
    expect(js.headers['cache-control']).toContain('immutable');

    const bare = await axios.get(`${app.url}/console`, { maxRedirects: 0, validateStatus: () => true });
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('/console/');
    // The folder also holds the compiled server module: never served.
    expect((await axios.get(`${app.url}/console/console.module.js`, { validateStatus: () => true })).status).toBe(404);
    expect((await axios.get(`${app.url}/internal/orders`, { validateStatus: () => true })).status).toBe(401);
  });

  it('logs in with the internal token, refusing a wrong one', async () => {
    await page.goto(consoleUrl());
    await page.getByLabel('Internal API token').waitFor();
    await shot('login');
    await page.getByLabel('Internal API token').fill('not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('[role=alert]', { hasText: 'unauthorized' }).waitFor();
    await page.getByLabel('Internal API token').fill(TEST_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(await page.evaluate(() => Object.values(sessionStorage))).toContain(TEST_TOKEN);
  });

  it('shows the dashboard from the sandbox: wallet, last sync, orders by status, the order to decide, budget and queue', async () => {
    await page.goto(consoleUrl('#/'));
    const wallet = page.getByTestId('wallet-balance');
    await page.waitForFunction(
      (b) => document.querySelector('[data-testid=wallet-balance]')?.textContent?.includes(b),
      sandbox.walletBalance(),
    );
    expect(await wallet.textContent()).toBe(`${sandbox.walletBalance()} CNY`);
    await page.getByTestId('last-sync').getByText('succeeded').waitFor();
    await page.locator('[data-testid=status-counts] [data-status=delivered]', { hasText: '2' }).waitFor();
    expect(await page.locator('[data-testid=status-counts] [data-status=pending_payment]').textContent()).toBe('1');
    expect(await page.getByTestId('unknown-count').textContent()).toBe('1');
    await page.getByTestId('decision-table').getByText('shop-1003').waitFor();
    expect(await page.locator('svg.chart').count()).toBe(2);
    // the request budget (off in this test) and the queue, from /health; the count links to the queued orders
    await page.getByTestId('queued-count').waitFor();
    expect(await page.getByTestId('queued-count').textContent()).toBe('0');
    expect(await page.getByTestId('queued-count').getAttribute('href')).toBe('#/orders?status=queued');
    expect(await page.getByTestId('budget-use').textContent()).toContain('off');
    await shot('dashboard');
  });

  it('lists orders and filters them by status', async () => {
    await page.getByRole('link', { name: 'Orders', exact: true }).click();
    const rows = page.locator('[data-testid=orders-table] tbody tr[data-order]');
    await page.locator('tr[data-order=shop-1004]').waitFor();
    expect(await rows.count()).toBe(4);
    await shot('orders');
    await page.getByLabel('Status').selectOption('submit_unknown');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=orders-table] tbody tr[data-order]').length === 1);
    expect(await rows.first().getAttribute('data-order')).toBe('shop-1003');
  });

  it('shows an order: upstream ids, amounts, the timeline, and the items masked until revealed', async () => {
    const o = await order('shop-1002');
    await page.goto(consoleUrl('#/orders/shop-1002'));
    await page.getByTestId('order-status').getByText('delivered').waitFor();
    expect(await page.locator('[data-field=upstream_order_id]').textContent()).toBe(String(o.upstream_order_id));
    expect(await page.locator('[data-field=amount]').textContent()).toBe(`${o.amount} CNY`);
    await page.locator('[data-testid=timeline] li[data-to=delivered]').waitFor();
    const items = page.getByTestId('items');
    for (const item of o.items) expect(await items.textContent()).not.toContain(item);
    await shot('order-detail');
    await page.getByRole('button', { name: 'Reveal items' }).click();
    for (const item of o.items) expect(await items.textContent()).toContain(item);
  });

  it("shows the contract's error as it comes: a delivered order cannot be canceled", async () => {
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel the order' }).click();
    await page.getByRole('dialog').locator('[data-error-code=cancel_not_allowed]').waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Back' }).click();
    expect((await order('shop-1002')).status).toBe('delivered');
  });

  it('resolves a submit_unknown order with its upstream order id (a wrong one is refused)', async () => {
    const upstream = sandbox.orders().find((o) => o.downstream_order_no === 'shop-1003')!;
    const other = sandbox.orders().find((o) => o.downstream_order_no === 'shop-1001')!;
    await page.goto(consoleUrl('#/orders/shop-1003'));
    await page.getByTestId('order-status').getByText('submit unknown').waitFor();
    await page.getByRole('button', { name: 'Resolve…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('input[name=upstream_order_id]').fill(String(other.id));
    await dialog.getByRole('button', { name: 'Resolve' }).click();
    await dialog.locator('[data-error-code=resolve_mismatch]').waitFor();
    await dialog.locator('input[name=upstream_order_id]').fill(String(upstream.id));
    await dialog.getByRole('button', { name: 'Resolve' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('status').getByText('Resolved').waitFor();
    const resolved = await order('shop-1003');
    expect(resolved.upstream_order_id).toBe(upstream.id);
    expect(resolved.status).not.toBe('submit_unknown');
    expect(await page.locator('[data-field=upstream_order_id]').textContent()).toBe(String(upstream.id));
    await page.locator('[data-testid=timeline] li[data-source=operator]').first().waitFor();
  });

  it('resolves a rejected order the upstream showed an order for (anomaly upstream_order_exists) with that order', async () => {
    // the upstream places it, then answers with a refusal: rejected here; its callback's anomaly (see
    // callbacks-edges.e2e-spec.ts) is recorded as that path does
    sandbox.faults.set({
      rules: [{ operation: 'createOrder', kind: 'error_after', status: 409, errorCode: 'insufficient_stock', times: 1 }],
    });
    const refused = await app.http.post('/internal/orders', { shop_order_no: 'shop-1009', sku_code: sku.sku_code, quantity: 1 });
    expect([refused.status, refused.data.order?.status]).toEqual([409, 'rejected']);
    await db.query("UPDATE orders SET anomaly = 'upstream_order_exists' WHERE shop_order_no = 'shop-1009'");
    const upstream = sandbox.orders().find((o) => o.downstream_order_no === 'shop-1009')!;
    await page.goto(consoleUrl('#/orders/shop-1009'));
    await page.getByTestId('order-status').getByText('rejected').waitFor();
    await page.getByRole('button', { name: 'Resolve…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('input[name=upstream_order_id]').fill(String(upstream.id));
    await dialog.getByRole('button', { name: 'Resolve' }).click();
    await dialog.waitFor({ state: 'detached' });
    const resolved = await order('shop-1009');
    expect(resolved).toMatchObject({ upstream_order_id: upstream.id, anomaly: null });
    expect(resolved.status).not.toBe('rejected');
  });

  it('cancels a pending order (the upstream agrees first) and records its refund', async () => {
    const upstream = sandbox.orders().find((o) => o.downstream_order_no === 'shop-1004')!;
    await page.goto(consoleUrl('#/orders/shop-1004'));
    await page.getByTestId('order-status').getByText('pending payment').waitFor();
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel the order' }).click();
    await page.getByTestId('order-status').getByText('canceled').waitFor();
    expect(sandbox.order(upstream.id)?.status).toBe('canceled');
    const canceled = await order('shop-1004');
    expect(canceled.refund_state).toBe('refundable');
    await page
      .locator('[data-field=refund_state]', { hasText: `${canceled.refundable_amount} CNY` })
      .getByText('refundable')
      .waitFor();

    await page.getByRole('button', { name: 'Refund…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Record the refund' }).click();
    await page.locator('[data-field=refund_state]').getByText('refunded').waitFor();
    expect((await order('shop-1004')).refund_state).toBe('refunded');
    await page.locator('[data-testid=timeline] li[data-to=canceled]').first().waitFor();
  });

  it('lists the catalog with cost, sale price, margin and stock, and filters it', async () => {
    await page.goto(consoleUrl('#/catalog'));
    const row = page.locator(`[data-testid=skus-table] tr[data-sku="${sku.sku_code}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(sku.cost_price);
    await shot('catalog');
    await page.getByLabel('Available').selectOption('false');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid=skus-table] tbody tr[data-sku]')];
      return rows.length > 0 && rows.every((r) => r.textContent?.includes('unavailable'));
    });
  });

  it('edits a SKU pricing rule with a preview, and the SKU sells at the new price', async () => {
    const expected = salePrice(sku.cost_price, compileRule({ markupPercent: '25', markupFixed: '0.5', rounding: '0.1' }, '0.01', 'sku'));
    expect(expected).not.toBe(sku.sale_price);
    await page.goto(consoleUrl(`#/catalog/${sku.sku_code}`));
    await page.getByRole('link', { name: 'Pricing rule…' }).click();
    const rule = page.locator(`[data-testid=rules-table] tr[data-rule="s:${sku.sku_code}"]`);
    await rule.waitFor();
    await rule.locator('input[name=markup_percent]').fill('25');
    await rule.locator('input[name=markup_fixed]').fill('0.5');
    await rule.locator('input[name=rounding]').fill('0.1');
    const preview = page.locator(`[data-testid=pricing-preview] tr[data-sku="${sku.sku_code}"] [data-field=preview_price]`);
    await preview.getByText(expected).waitFor();
    await shot('pricing');
    await page.getByRole('button', { name: 'Save rules…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Save and reprice' }).click();
    await page.getByRole('status').getByText('Rules saved; 1 sale price changed.').waitFor();
    expect(((await app.http.get(`/internal/catalog/skus/${sku.sku_code}`)).data.sku as SkuBody).sale_price).toBe(expected);

    await page.goto(consoleUrl(`#/catalog/${sku.sku_code}`));
    await page.locator('dd[data-field=sale_price]', { hasText: expected }).waitFor();
    // The history: created by the first sync, the cost moved by the second, the sale price by the rule.
    const history = page.getByTestId('sku-changes');
    await history.locator('tr[data-field=created]').waitFor();
    await history.locator('tr[data-field=cost_price]').first().waitFor();
    await history.locator('tr[data-field=sale_price]', { hasText: expected }).first().waitFor();
    await shot('sku-history');
  });

  it('starts a sync and watches it to the end', async () => {
    const before = (await app.http.get('/internal/catalog/sync-runs')).data.total as number;
    await page.goto(consoleUrl('#/sync'));
    await page.locator('[data-testid=runs-table] tbody tr[data-run]').first().waitFor();
    await page.getByLabel('Mode').selectOption('full');
    await page.getByRole('button', { name: 'Start sync' }).click();
    await page.locator('[data-testid=sync-progress][data-status=succeeded]').waitFor();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid=runs-table] tbody tr[data-run]').length === n, before + 1);
    await shot('sync-runs');
  });

  it('reconciles a range: the run to its end, an upstream refund with no callback as differences (page, order), 409 mid-run', async () => {
    // The relay has no CALLBACK_PUBLIC_URL here, so the upstream's refund tells nobody, and nothing
    // follows a delivered order any more: only a reconciliation read finds it.
    const delivered = await order('shop-1001');
    expect(delivered.status).toBe('delivered');
    sandbox.refundOrder(delivered.upstream_order_id!);
    // datetime-local values in the browser's time zone (UTC here): the last hour, to the next minute
    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    const from = minute(Date.now() - 60 * 60_000);
    const to = minute(Date.now() + 60_000);

    await page.goto(consoleUrl('#/reconciliation'));
    await page.getByRole('link', { name: 'Reconciliation', exact: true }).waitFor();
    await page.getByTestId('reconciliation-runs').waitFor();
    await page.getByLabel('Orders created from').fill(from);
    await page.getByLabel('to', { exact: true }).fill(to);
    await page.getByRole('button', { name: 'Start reconciliation' }).click();
    const progress = page.locator('[data-testid=reconciliation-progress][data-status=succeeded]');
    await progress.waitFor();
    const runId = (await progress.getAttribute('data-run'))!;
    const run = (await app.http.get(`/internal/reconciliation/runs/${runId}`)).data.run as {
      from: string;
      to: string;
      orders_total: number;
      orders_done: number;
      differences: number;
    };
    expect(run).toMatchObject({ from: `${from}:00.000Z`, to: `${to}:00.000Z` });
    expect(run.orders_done).toBe(run.orders_total);
    expect(run.differences).toBeGreaterThanOrEqual(2);
    await page.locator(`[data-testid=reconciliation-runs] tr[data-run="${runId}"][data-status=succeeded]`).waitFor();

    // the order's two differences, found by this run and applied: refunded, and the refunded amount
    const refunded = await order('shop-1001');
    expect(refunded).toMatchObject({ status: 'refunded', refund_state: 'refundable', refunded_amount: delivered.amount });
    const items = page.getByTestId('reconciliation-items');
    const statusRow = items.locator('tr[data-order=shop-1001][data-field=status]');
    await statusRow.waitFor();
    expect(await statusRow.locator('[data-value=local]').textContent()).toBe('delivered');
    expect(await statusRow.locator('[data-value=upstream]').textContent()).toBe('refunded');
    expect(await statusRow.locator('[data-value=applied]').textContent()).toBe('yes');
    expect(await statusRow.textContent()).toContain(runId);
    const amountRow = items.locator('tr[data-order=shop-1001][data-field=refunded_amount]');
    expect(await amountRow.locator('[data-value=upstream]').textContent()).toBe(delivered.amount);
    expect(await amountRow.locator('a').getAttribute('href')).toBe('#/orders/shop-1001');
    await shot('reconciliation');

    // filtered by order: only its rows; the order page lists them too
    await page.locator('input[name=order]').fill('shop-1001');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid=reconciliation-items] tbody tr[data-item]')] as unknown as Array<{
        getAttribute(n: string): string | null;
      }>;
      return rows.length === 2 && rows.every((r) => r.getAttribute('data-order') === 'shop-1001');
    });
    await page.goto(consoleUrl('#/orders/shop-1001'));
    await page.getByTestId('order-status').getByText('refunded').waitFor();
    await page.locator('[data-testid=order-reconciliation] tr[data-field=refunded_amount]').waitFor();
    expect(await page.locator('[data-testid=order-reconciliation] tr[data-item]').count()).toBe(2);

    // a run started elsewhere (its reads answer slowly) is running: the page's start is refused with
    // the 409, and the page follows that run to its end
    await page.goto(consoleUrl('#/reconciliation'));
    await page.locator('[data-testid=reconciliation-runs] tr[data-run]').first().waitFor();
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 1500, times: 10 }] });
    const other = await app.http.post('/internal/reconciliation', { from: `${from}:00Z`, to: `${to}:00Z` });
    expect(other.status).toBe(202);
    await page.getByRole('button', { name: 'Start reconciliation' }).click();
    await page.locator('[role=alert][data-error-code=reconciliation_in_progress]').waitFor();
    await page.locator(`[data-testid=reconciliation-progress][data-run="${other.data.run_id as string}"][data-status=succeeded]`).waitFor();
    sandbox.faults.reset();
  });

  it('goes back to the login form when the service refuses the token', async () => {
    await page.evaluate(() => {
      for (const k of Object.keys(sessionStorage)) sessionStorage.setItem(k, 'revoked-token');
    });
    await page.goto(consoleUrl('#/orders'));
    await page.getByText('The service refused the token').waitFor();
    await page.getByLabel('Internal API token').waitFor();
    expect(await page.evaluate(() => Object.keys(sessionStorage).length)).toBe(0);
  });
});

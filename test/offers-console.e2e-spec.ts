/**
 * The console's Offers page (issue 32) in a real headless Chromium, against the service with two
 * suppliers: an offer created from the page (its sources typed in), its sources' live cost, stock and
 * margin shown, a refusal shown with its fields, the list, and the delete. The second supplier's SKU
 * is a fixture of its catalog (test/support/offer-fixtures.ts).
 */
import type { Page } from 'playwright-core';
import { useAppSuite } from './support/app-suite.js';
import { ensureConsoleBuilt, openConsole, type ConsoleBrowser } from './support/console-browser.js';
import { SupplierSkuFixtures } from './support/offer-fixtures.js';

interface SkuView {
  sku_key: string;
  sku_code: string;
  cost_price: string;
  sale_price: string;
}

describe('console: offers (headless Chromium)', () => {
  // Built before the service starts, which serves the console it finds then.
  beforeAll(() => ensureConsoleBuilt(), 180_000);
  const suite = useAppSuite({ suppliers: { second: {} }, seed: true });
  let con: ConsoleBrowser;
  let page: Page;
  let mainSku: SkuView;
  let secondKey: string;

  beforeAll(async () => {
    const found = suite.sandbox.catalog.findSku({ stockStatus: 'in_stock' })!;
    mainSku = (await suite.app.http.get(`/internal/catalog/skus/${found.product.id}:${found.sku.sku_code}`)).data.sku as SkuView;
    const fixtures = new SupplierSkuFixtures(suite.db, suite.app, 'second');
    await fixtures.setCurrencyAsEnv();
    secondKey = await fixtures.add(mainSku, 910001, '0.25');
    con = await openConsole();
    page = con.page;
  }, 180_000);
  afterAll(() => con?.close());
  afterEach(() => expect(con.errors).toEqual([]));

  const source = (i: number) => page.locator(`[data-testid=offer-sources] tr[data-source="${i}"]`);

  it('creates an offer from the page and shows its sources with their cost, stock and margin', async () => {
    await page.goto(`${suite.app.url}/console/#/offers`);
    await page.getByRole('heading', { name: 'Offers' }).waitFor();
    await page.locator('[data-testid=offers-table]', { hasText: 'No offers.' }).waitFor();
    await page.locator('input[name=new-code]').fill('console-1');
    await page.getByRole('button', { name: 'Open or create' }).click();
    await page.getByRole('heading', { name: 'New offer console-1' }).waitFor();

    await page.locator('input[name=title]').fill('From the console');
    await source(0).locator('input[name=supplier]').fill('main');
    await source(0).locator('input[name=sku_key]').fill(mainSku.sku_key);
    await page.getByRole('button', { name: 'Add source' }).click();
    await source(1).locator('input[name=supplier]').fill('second');
    await source(1).locator('input[name=sku_key]').fill(secondKey);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('status').filter({ hasText: 'Created.' }).waitFor();
    await page.getByRole('heading', { name: 'Offer console-1' }).waitFor();

    const offer = (await suite.app.http.get('/internal/offers/console-1')).data.offer as {
      title: string;
      sale_price: string;
      sources: Array<{ sku_key: string }>;
    };
    expect(offer).toMatchObject({ title: 'From the console', sale_price: mainSku.sale_price });
    expect(offer.sources.map((s) => s.sku_key)).toEqual([mainSku.sku_key, secondKey]);
    expect(await page.locator('[data-testid=offer-price] [data-field=sale_price]').textContent()).toContain(mainSku.sale_price);
    await source(1).locator('.badge[data-value=available]').waitFor();
    expect(await source(1).textContent()).toContain('0.25');
    expect(await source(0).textContent()).toContain(mainSku.cost_price);
    await source(1).locator('.margin').waitFor();
  });

  it('shows a refusal with its fields, and changes nothing', async () => {
    await page.goto(`${suite.app.url}/console/#/offers/console-1`);
    await page.getByRole('heading', { name: 'Offer console-1' }).waitFor();
    await source(1).locator('input[name=sku_key]').fill('1:NOPE');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-testid=offer-fields]', { hasText: 'sources.1.sku_key' }).waitFor();
    const offer = (await suite.app.http.get('/internal/offers/console-1')).data.offer as { sources: Array<{ sku_key: string }> };
    expect(offer.sources.map((s) => s.sku_key)).toEqual([mainSku.sku_key, secondKey]);
  });

  it('lists the offer, and deletes it', async () => {
    await page.goto(`${suite.app.url}/console/#/offers`);
    const row = page.locator('tr[data-offer=console-1]');
    await row.waitFor();
    expect(await row.locator('[data-field=sale_price]').textContent()).toContain(mainSku.sale_price);
    expect(await row.textContent()).toContain('main › second');
    await row.getByRole('link', { name: 'console-1' }).click();
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.locator('[data-testid=offers-table]', { hasText: 'No offers.' }).waitFor();
    expect((await suite.app.http.get('/internal/offers/console-1')).status).toBe(404);
  });
});

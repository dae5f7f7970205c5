/**
 * SKUs of a supplier other than the `UPSTREAM_*` one for the offers' tests, as rows of its catalog
 * (`catalog_skus` of that supplier): a copy of one of the env supplier's SKUs under another product
 * id, at a given cost, priced by the pricing rules in force, and the supplier's currency in
 * `relay_state` (`catalog.currency:<supplier>`); and the shape of an offer order the tests read.
 */
import { PricingContextService } from '../../src/catalog/pricing-context.service.js';
import { supplierCurrencyKey } from '../../src/offers/offer.repository.js';
import type { TestApp, TestDatabase } from './test-app.js';

/** An offer order's route entry as the API answers it (CONTRACT §11). */
export interface RouteView {
  attempt: number;
  supplier: string;
  sku_key: string | null;
  outcome: string;
  error_code: string | null;
}

/** The fields of an offer order the tests read. */
export interface OfferOrder {
  shop_order_no: string;
  offer: string | null;
  supplier: string;
  sku_key: string | null;
  status: string;
  attempt: number;
  upstream_order_id: number | null;
  route?: RouteView[];
}

export interface FixtureSource {
  sku_key: string;
  sku_code: string;
}

export class SupplierSkuFixtures {
  private columns: string[] | null = null;

  constructor(
    private readonly db: TestDatabase,
    private readonly app: TestApp,
    readonly supplier: string,
  ) {}

  /** Gives the supplier the env supplier's catalog currency. */
  async setCurrencyAsEnv(): Promise<void> {
    await this.db.query(
      `INSERT INTO relay_state (key, value, updated_at)
       SELECT $1, value, now() FROM relay_state WHERE key IN ($2, 'catalog.currency') ORDER BY key DESC LIMIT 1
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [supplierCurrencyKey(this.supplier), supplierCurrencyKey('main')],
    );
  }

  async setCurrency(currency: string): Promise<void> {
    await this.db.query(
      `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, $2::jsonb, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [supplierCurrencyKey(this.supplier), JSON.stringify({ currency })],
    );
  }

  /** A SKU of the supplier copied from `from` under `productId`, at `cost`; returns its sku_key. */
  async add(from: FixtureSource, productId: number, cost: string, stockStatus = 'in_stock'): Promise<string> {
    this.columns ??= (
      await this.db.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
          WHERE table_name = 'catalog_skus' AND table_schema = current_schema() AND is_generated = 'NEVER' ORDER BY ordinal_position`,
      )
    ).map((r) => r.column_name);
    const ctx = await this.app.relay.app.get(PricingContextService).current();
    const [row] = await this.db.query<{ category_id: string }>(`SELECT category_id::text FROM catalog_skus WHERE sku_key = $1`, [
      from.sku_key,
    ]);
    const key = `${productId}:${from.sku_code}`;
    const sale = ctx.price(cost, { skuKey: key, skuCode: from.sku_code, categoryId: Number(row.category_id) });
    const set: Record<string, string> = {
      supplier: '$6',
      product_id: '$2::bigint',
      cost_price: '$3::numeric',
      sale_price: '$4::numeric',
      stock_status: '$5::text',
      stock_quantity: `CASE WHEN $5::text = 'out_of_stock' THEN 0 ELSE 100 END`,
    };
    await this.db.query(
      `INSERT INTO catalog_skus (${this.columns.join(', ')})
       SELECT ${this.columns.map((c) => set[c] ?? c).join(', ')} FROM catalog_skus WHERE sku_key = $1`,
      [from.sku_key, productId, cost, sale, stockStatus, this.supplier],
    );
    return key;
  }
}

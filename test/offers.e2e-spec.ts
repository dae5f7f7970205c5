/**
 * Offers (CONTRACT §11, issue 32): PUT/GET/list/DELETE over two suppliers; bad offers refused with
 * their fields and nothing stored; the default sale price from the highest cost among the available
 * sources; the offer's value following its sources through the catalog's writes (a sync, a rule
 * change), with `updated_at`, `changed_since` and the shop's `offer.changed` webhook.
 *
 * The second supplier's SKUs are SQL fixtures in its catalog (`catalog_skus` rows of supplier
 * `second`, priced by the rules in force): the sync of a supplier other than the `UPSTREAM_*` one is
 * the catalog's part of issue 31. The env supplier's SKUs come from real syncs of its sandbox
 * (incremental ones after the first: a full pass would check the fixtures' products at the env
 * supplier's sandbox).
 */
import { offerChangedEvent } from '../src/offers/offer-valuation.service.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor as waitForRun } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { SupplierSkuFixtures } from './support/offer-fixtures.js';
import { waitFor } from './support/wait.js';

interface OfferView {
  code: string;
  title: string | null;
  routing: string;
  sources: Array<{
    supplier: string;
    sku_key: string;
    cost_price: string | null;
    currency: string | null;
    available: boolean;
    stock_status: string | null;
  }>;
  sale_price: string | null;
  currency: string | null;
  available: boolean;
  updated_at: string;
}
interface SkuView {
  sku_key: string;
  sku_code: string;
  cost_price: string;
  sale_price: string;
  available: boolean;
}

const OFFERS = '/internal/offers';
const shop = new FakeShop();

describe('offers', () => {
  const suite = useAppSuite({
    suppliers: { second: {} },
    seed: true,
    env: async () => {
      await shop.start('/shop/hooks');
      return { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: 'offers-webhook-secret' };
    },
  });
  afterAll(() => shop.stop());

  const http = () => suite.app.http;
  const put = (code: string, body: unknown) => http().put(`${OFFERS}/${code}`, body);
  const getOffer = async (code: string) => {
    const r = await http().get(`${OFFERS}/${code}`);
    expect(r.status).toBe(200);
    return (r.data as { offer: OfferView }).offer;
  };
  const localSku = async (key: string) => {
    const r = await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`);
    expect(r.status).toBe(200);
    return (r.data as { sku: SkuView }).sku;
  };
  /** An incremental sync of the env supplier's catalog, to its end. */
  const syncMain = async () => {
    const started = await http().post('/internal/catalog/sync', { mode: 'incremental' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    const run = await waitForRun(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string; mode: string } }).run,
      (r) => r.status !== 'running',
      'the sync',
    );
    expect(run).toMatchObject({ status: 'succeeded', mode: 'incremental' });
  };
  const offerEvents = (code: string) => shop.received.filter((h) => h.event === 'offer.changed' && h.subject === code);
  const eventData = (body: string) => (JSON.parse(body) as { data: Record<string, unknown> }).data;

  // The env supplier's SKUs the offers use (listed, in stock, distinct products).
  let mainA: SkuView;
  let mainB: SkuView;
  let second: SupplierSkuFixtures;
  const secondSku = (from: SkuView, productId: number, cost: string, stockStatus?: string) =>
    second.add(from, productId, cost, stockStatus);

  beforeAll(async () => {
    const keys = [
      suite.sandbox.catalog.findSku({ stockStatus: 'in_stock' })!,
      suite.sandbox.catalog.findSku({ stockStatus: 'in_stock', skip: 3 })!,
    ];
    expect(keys[0].product.id).not.toBe(keys[1].product.id);
    [mainA, mainB] = await Promise.all(keys.map((k) => localSku(`${k.product.id}:${k.sku.sku_code}`)));
    second = new SupplierSkuFixtures(suite.db, suite.app, 'second');
    await second.setCurrencyAsEnv();
  });

  it('creates, reads, lists, replaces and deletes an offer, answering exactly the contract', async () => {
    const cheap = await secondSku(mainA, 900001, '0.50');
    const body = {
      title: 'Two sources',
      routing: 'priority',
      sources: [
        { supplier: 'main', sku_key: mainA.sku_key },
        { supplier: 'second', sku_key: cheap },
      ],
    };
    const created = await put('crud-1', body);
    expect(created.status).toBe(201);
    const offer = (created.data as { ok: boolean; offer: OfferView }).offer;
    expect(Object.keys(offer).sort()).toEqual(['available', 'code', 'currency', 'routing', 'sale_price', 'sources', 'title', 'updated_at']);
    expect(Object.keys(offer.sources[0]).sort()).toEqual(['available', 'cost_price', 'currency', 'sku_key', 'stock_status', 'supplier']);
    expect(offer).toMatchObject({
      code: 'crud-1',
      title: 'Two sources',
      routing: 'priority',
      available: true,
      sources: [
        { supplier: 'main', sku_key: mainA.sku_key, cost_price: mainA.cost_price, available: true },
        { supplier: 'second', sku_key: cheap, cost_price: '0.50', available: true, stock_status: 'in_stock' },
      ],
    });
    expect(await getOffer('crud-1')).toEqual(offer);

    const replaced = await put('crud-1', { ...body, routing: 'cheapest', sources: [...body.sources].reverse(), title: null });
    expect(replaced.status).toBe(200);
    const after = (replaced.data as { offer: OfferView }).offer;
    expect(after).toMatchObject({ routing: 'cheapest', title: null, sources: [{ sku_key: cheap }, { sku_key: mainA.sku_key }] });
    // neither the sale price nor the availability moved: updated_at neither
    expect(after.updated_at).toBe(offer.updated_at);

    const list = await http().get(OFFERS);
    expect(list.status).toBe(200);
    expect(list.data).toMatchObject({ ok: true, page: 1, page_size: 100 });
    expect((list.data as { items: OfferView[] }).items.find((o) => o.code === 'crud-1')).toEqual(after);

    expect((await http().delete(`${OFFERS}/crud-1`)).data).toEqual({ ok: true });
    for (const r of [
      await http().get(`${OFFERS}/crud-1`),
      await http().delete(`${OFFERS}/crud-1`),
      await http().get(`${OFFERS}/bad%20code`),
    ])
      expect({ status: r.status, code: (r.data as { error_code: string }).error_code }).toEqual({ status: 404, code: 'offer_not_found' });
    const [{ n }] = await suite.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM offer_sources WHERE offer_code = 'crud-1'`);
    expect(n).toBe(0);
  });

  it('refuses bad offers with their fields, and stores nothing', async () => {
    const other = await secondSku(mainB, 900002, '1.00');
    const good = { routing: 'priority', sources: [{ supplier: 'main', sku_key: mainA.sku_key }] };
    expect((await put('kept', good)).status).toBe(201);
    const kept = await getOffer('kept');
    const cases: Array<[string, string, unknown, string[]]> = [
      [
        'an unknown supplier',
        'bad-1',
        { routing: 'priority', sources: [{ supplier: 'nobody', sku_key: mainA.sku_key }] },
        ['sources.0.supplier'],
      ],
      ['an unknown SKU', 'bad-2', { routing: 'priority', sources: [{ supplier: 'second', sku_key: '1:NOPE' }] }, ['sources.0.sku_key']],
      [
        "a SKU of another supplier's catalog",
        'bad-3',
        { routing: 'priority', sources: [{ supplier: 'second', sku_key: mainA.sku_key }] },
        ['sources.0.sku_key'],
      ],
      [
        'a SKU twice',
        'bad-4',
        {
          routing: 'priority',
          sources: [
            { supplier: 'second', sku_key: other },
            { supplier: 'second', sku_key: other },
          ],
        },
        ['sources.1'],
      ],
      [
        '11 sources',
        'bad-5',
        { routing: 'priority', sources: Array.from({ length: 11 }, (_, i) => ({ supplier: 'main', sku_key: `${i + 1}:X` })) },
        ['sources'],
      ],
      ['no sources', 'bad-6', { routing: 'priority', sources: [] }, ['sources']],
      ['a bad routing', 'bad-7', { routing: 'random', sources: good.sources }, ['routing']],
      ['a bad code', 'bad%20code', good, ['code']],
      [
        'a replacement with an unknown SKU',
        'kept',
        { routing: 'cheapest', sources: [{ supplier: 'main', sku_key: '1:NOPE' }] },
        ['sources.0.sku_key'],
      ],
    ];
    for (const [what, code, body, fields] of cases) {
      const r = await put(code, body);
      expect({
        what,
        status: r.status,
        code: (r.data as { error_code: string }).error_code,
        fields: Object.keys((r.data as { fields: object }).fields ?? {}),
      }).toEqual({
        what,
        status: 400,
        code: 'bad_request',
        fields,
      });
    }
    const [{ n }] = await suite.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM offers WHERE code LIKE 'bad%'`);
    expect(n).toBe(0);
    expect(await getOffer('kept')).toEqual(kept);

    // sources of different currencies
    await second.setCurrency('USD');
    try {
      const r = await put('bad-8', {
        routing: 'priority',
        sources: [
          { supplier: 'main', sku_key: mainA.sku_key },
          { supplier: 'second', sku_key: other },
        ],
      });
      expect(r.status).toBe(400);
      expect((r.data as { fields: Record<string, string[]> }).fields).toEqual({ sources: [expect.stringContaining('one currency')] });
      expect((await http().get(`${OFFERS}/bad-8`)).status).toBe(404);
    } finally {
      await second.setCurrencyAsEnv();
    }
  });

  it('prices the highest cost among the available sources by the rules, unless the operator set a price', async () => {
    const low = await secondSku(mainA, 900003, '0.40');
    const high = await secondSku(mainA, 900004, '999.00');
    const highOut = await secondSku(mainA, 900005, '5000.00', 'out_of_stock');
    const [highSku] = await suite.db.query<{ sale_price: string }>(
      `SELECT sale_price::text FROM catalog_skus WHERE supplier = 'second' AND sku_key = $1`,
      [high],
    );
    const sources = (...keys: Array<[string, string]>) => keys.map(([supplier, sku_key]) => ({ supplier, sku_key }));

    let r = await put('price-1', { routing: 'priority', sources: sources(['main', mainA.sku_key], ['second', low], ['second', highOut]) });
    expect((r.data as { offer: OfferView }).offer).toMatchObject({ sale_price: mainA.sale_price, available: true });

    r = await put('price-2', { routing: 'priority', sources: sources(['second', low], ['main', mainA.sku_key], ['second', high]) });
    expect((r.data as { offer: OfferView }).offer.sale_price).toBe(highSku.sale_price);
    expect(Number(highSku.sale_price)).toBeGreaterThanOrEqual(999);

    r = await put('price-3', { routing: 'cheapest', sale_price: '12.34', sources: sources(['second', high]) });
    expect((r.data as { offer: OfferView }).offer).toMatchObject({ sale_price: '12.34', routing: 'cheapest' });

    // none available: the highest cost of all
    r = await put('price-4', { routing: 'priority', sources: sources(['second', highOut]) });
    const [outSku] = await suite.db.query<{ sale_price: string }>(
      `SELECT sale_price::text FROM catalog_skus WHERE supplier = 'second' AND sku_key = $1`,
      [highOut],
    );
    expect((r.data as { offer: OfferView }).offer).toMatchObject({ sale_price: outSku.sale_price, available: false });

    const bad = await http().get(OFFERS, { params: { changed_since: 'yesterday', available: 'maybe' } });
    expect({ status: bad.status, fields: Object.keys((bad.data as { fields: object }).fields).sort() }).toEqual({
      status: 400,
      fields: ['available', 'changed_since'],
    });

    const avail = await http().get(OFFERS, { params: { available: false } });
    expect((avail.data as { items: OfferView[] }).items.map((o) => o.code)).toEqual(['price-4']);
  });

  it('follows its sources through a sync: availability and sale price move updated_at, announce it, show in changed_since', async () => {
    const backup = await secondSku(mainB, 900006, '0.30', 'out_of_stock');
    const other = await put('follow-other', { routing: 'priority', sources: [{ supplier: 'main', sku_key: mainB.sku_key }] });
    expect(other.status).toBe(201);
    const created = await put('follow-1', {
      title: 'Follows',
      routing: 'priority',
      sources: [
        { supplier: 'main', sku_key: mainA.sku_key },
        { supplier: 'second', sku_key: backup },
      ],
    });
    expect(created.status).toBe(201);
    const before = (created.data as { offer: OfferView }).offer;
    expect(before).toMatchObject({ available: true, sale_price: mainA.sale_price });
    await waitFor(
      () => offerEvents('follow-1').length,
      (n) => n === 1,
      'the creation webhook',
    );
    expect(eventData(offerEvents('follow-1')[0].body)).toMatchObject({
      offer: 'follow-1',
      created: true,
      available: true,
    });

    // a sync that changes nothing of the offer's sources leaves it
    await syncMain();
    expect((await getOffer('follow-1')).updated_at).toBe(before.updated_at);

    // the only available source goes out of stock upstream
    suite.sandbox.catalog.setStock(mainA.sku_code, 'out_of_stock');
    await syncMain();
    const out = await getOffer('follow-1');
    expect(out).toMatchObject({ available: false, sources: [{ available: false, stock_status: 'out_of_stock' }, { available: false }] });
    expect(out.updated_at > before.updated_at).toBe(true);
    const [{ listed }] = await suite.db.query<{ listed: boolean }>(
      `SELECT listed FROM catalog_skus WHERE supplier = 'second' AND sku_key = $1`,
      [backup],
    );
    expect(listed).toBe(true); // the fixture was not touched by the env supplier's sync
    const hook = await waitFor(
      () => offerEvents('follow-1'),
      (l) => l.length === 2,
      'the change webhook',
    );
    expect(eventData(hook[1].body)).toMatchObject({
      offer: 'follow-1',
      created: false,
      available: false,
      old_available: true,
      updated_at: out.updated_at,
    });
    expect(shop.verify(hook[1], 'offers-webhook-secret')).toEqual({ ok: true });

    const since = await http().get(OFFERS, { params: { changed_since: before.updated_at } });
    expect(since.status).toBe(200);
    const codes = (since.data as { items: OfferView[] }).items.map((o) => o.code);
    expect(codes).toContain('follow-1');
    expect(codes).not.toContain('follow-other');
    expect((await http().get(OFFERS, { params: { changed_since: out.updated_at } })).data).toMatchObject({ items: [], total: 0 });

    // back in stock at a higher cost: available again, priced from the new cost by the rules
    suite.sandbox.catalog.setStock(mainA.sku_code, 'in_stock', 50);
    suite.sandbox.catalog.setPrice(mainA.sku_code, '777.00');
    await syncMain();
    const back = await getOffer('follow-1');
    const sku = await localSku(mainA.sku_key);
    expect(sku.cost_price).toBe('777.00');
    expect(back).toMatchObject({ available: true, sale_price: sku.sale_price });
    expect(back.updated_at > out.updated_at).toBe(true);
    const third = await waitFor(
      () => offerEvents('follow-1'),
      (l) => l.length === 3,
      'the third webhook',
    );
    expect(eventData(third[2].body)).toMatchObject({
      available: true,
      sale_price: sku.sale_price,
      old_sale_price: out.sale_price,
    });
  });

  it('follows a pricing rule change of its source', async () => {
    const r = await put('rule-1', { routing: 'priority', sources: [{ supplier: 'main', sku_key: mainB.sku_key }] });
    expect(r.status).toBe(201);
    const before = (r.data as { offer: OfferView }).offer;
    const rules = await http().put('/internal/pricing/rules', {
      rules: [{ scope: 'sku', sku_code: mainB.sku_key, markup_percent: '50', markup_fixed: '0' }],
    });
    expect(rules.status).toBe(200);
    try {
      const sku = await localSku(mainB.sku_key);
      expect(sku.sale_price).not.toBe(before.sale_price);
      const after = await getOffer('rule-1');
      expect(after.sale_price).toBe(sku.sale_price);
      expect(after.updated_at > before.updated_at).toBe(true);
    } finally {
      expect((await http().put('/internal/pricing/rules', { rules: [] })).status).toBe(200);
    }
  });

  it("builds the shop's event from the values it announces", () => {
    const at = new Date('2026-11-29T10:00:00.000Z');
    expect(offerChangedEvent('x', null, null, { sale_price: '1.00', currency: 'CNY', available: true }, at)).toEqual({
      type: 'offer.changed',
      subject: 'x',
      payload: {
        offer: 'x',
        title: null,
        created: true,
        sale_price: '1.00',
        currency: 'CNY',
        available: true,
        old_sale_price: null,
        old_available: null,
        updated_at: '2026-11-29T10:00:00.000Z',
      },
    });
  });
});

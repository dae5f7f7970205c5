/**
 * Products with their content, images, tags and SEO data, the images mirrored into the database and
 * served at /media (CONTRACT §5, "A product"; issue #34), against the sandbox serving its own images:
 * the mirrored bytes are the supplier's and the content's `<img>` names the relay's copy; no answer the
 * shop receives names the supplier's host; each refused image is left out and reported while the sync
 * succeeds; an unchanged image is never fetched again; two replicas serve the same image; retention
 * deletes an image no product uses; MEDIA_MIRROR=false passes the URLs through; MEDIA_PUBLIC_URL
 * names the images.
 */
import { createHash } from 'node:crypto';
import axios from 'axios';
import { DataSource } from 'typeorm';
import { ProductRepository } from '../src/catalog/product.repository.js';
import { RetentionService } from '../src/retention/retention.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { waitForOrder } from './support/child-app.js';
import { runSync } from './support/sync-run.js';
import { waitFor } from './support/wait.js';

interface ProductView {
  supplier: string;
  product_id: number;
  slug: string;
  content: Record<string, string> | null;
  images: string[];
  tags: string[];
  seo_meta: Record<string, unknown> | null;
  listed: boolean;
  sku_keys: string[];
  updated_at: string;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const seededImage = (sandbox: SandboxServer, id: number) => sandbox.media.image(`/uploads/products/p${id}.png`);

describe('catalog products: images mirrored into the database (MEDIA_MIRROR, default)', () => {
  const suite = useAppSuite({
    sandbox: { catalog: { products: 12, seed: 3 } },
    // shop notifications are written to the outbox (their delivery to this closed port fails, and is retried)
    env: {
      UPSTREAM_TIMEOUT_MS: '1500',
      MEDIA_MAX_BYTES: '200000',
      SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/hooks',
      SHOP_WEBHOOK_SECRET: 'shop-secret',
    },
    instances: 2,
  });
  const productEvents = async () =>
    (
      await suite.db.query<{ subject: string; payload: Record<string, unknown> }>(
        `SELECT subject, payload FROM outbox_events WHERE event_type = 'product.changed' ORDER BY id`,
      )
    ).map((r) => r.subject);
  const product = async (id: number, app = suite.app): Promise<ProductView> => {
    const r = await app.http.get(`/internal/catalog/products/${id}`);
    expect(r.status).toBe(200);
    return (r.data as { product: ProductView }).product;
  };
  /** A mirrored image through a replica, without the token (as a browser asks for it). */
  const media = (path: string, app = suite.app) =>
    axios.get<Buffer>(`${app.url}${path}`, { responseType: 'arraybuffer', validateStatus: () => true });

  it('stores the supplier’s bytes, names them in `images` and in the content’s <img>, and serves them from every replica', async () => {
    const { sandbox, apps } = suite;
    const run = await runSync(suite.app.http, 'full');
    // the categories' icons are the sandbox's too, mirrored in the same pass
    const icons = [
      ...new Set(
        sandbox.catalog
          .categories()
          .map((c) => c.icon)
          .filter((i) => i !== ''),
      ),
    ];
    expect(icons.length).toBeGreaterThan(0);
    expect(run).toMatchObject({ status: 'succeeded', products_seen: 12, skipped_images: [], images_fetched: 12 + icons.length });
    const iconBytes = icons.reduce((n, i) => n + sandbox.media.image(i).length, 0);
    expect(run.image_bytes).toBe(
      Array.from({ length: 12 }, (_, i) => seededImage(sandbox, i + 1).length).reduce((a, b) => a + b, 0) + iconBytes,
    );
    // one download per image URL: product 2's content shows its image again
    expect(sandbox.media.stats.requests).toBe(12 + icons.length);

    const bytes = seededImage(sandbox, 2);
    const file = `/media/${sha256(bytes)}.png`;
    const p = await product(2);
    const upstream = sandbox.catalog.getProduct(2)!;
    expect(p).toMatchObject({ supplier: 'main', product_id: 2, slug: upstream.slug, images: [file], tags: upstream.tags, listed: true });
    expect(p.sku_keys).toEqual(upstream.skus.map((s) => `2:${s.sku_code}`).sort());
    // only the src value is spliced: the rest of the content is the upstream's, byte for byte
    expect(p.content).toEqual({
      'zh-CN': `<p>商品 2 详情</p><p><img src="${file}" alt="商品 2"></p>`,
      en: `<p>Details of product 2</p><p><img src="${file}" alt="product 2"></p>`,
    });
    expect(upstream.content?.en).toBe('<p>Details of product 2</p><p><img src="/uploads/products/p2.png" alt="product 2"></p>');
    expect((await product(3)).seo_meta).toEqual(sandbox.catalog.getProduct(3)!.seo_meta);

    for (const app of apps) {
      const r = await media(file, app);
      expect(r.status).toBe(200);
      expect(Buffer.from(r.data).equals(bytes)).toBe(true);
      expect(r.headers['content-type']).toBe('image/png');
      expect(r.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    }
    // every category names its icon's copy (the same bytes), or '' when it has none
    const tree = (await suite.app.http.get('/internal/catalog/categories')).data as {
      categories: Array<{ id: number; icon: string | null; children: Array<{ id: number; icon: string | null }> }>;
    };
    const shown = tree.categories.flatMap((c) => [c, ...c.children]);
    for (const up of sandbox.catalog.categories()) {
      const icon = shown.find((c) => c.id === up.id)!.icon;
      expect(icon).toBe(up.icon === '' ? '' : `/media/${sha256(sandbox.media.image(up.icon))}.png`);
    }
    // the second replica's answer is its own read of the database: no request reached the sandbox
    expect(sandbox.media.stats.requests).toBe(12 + icons.length);
    expect((await media(`/media/${'0'.repeat(64)}.png`)).status).toBe(404);
    // new products are announced by their SKUs' events: completing their images announces nothing more
    expect(await productEvents()).toEqual([]);
  });

  it('no answer the shop receives names the supplier’s host', async () => {
    const { sandbox } = suite;
    const host = new URL(sandbox.url).host;
    const answers = await Promise.all(
      [
        '/internal/catalog/products?page_size=500',
        '/internal/catalog/products/2',
        '/internal/catalog/skus?page_size=500',
        '/internal/catalog/categories',
        '/internal/catalog/skus/2:SKU-00002-1',
      ].map((path) => suite.app.http.get(path)),
    );
    for (const a of answers) {
      expect(a.status).toBe(200);
      const text = JSON.stringify(a.data);
      expect(text).not.toContain(host);
      expect(text).not.toContain('/uploads/');
    }
    const list = answers[0].data as { items: ProductView[]; total: number };
    expect(list.total).toBe(12);
    expect(list.items.every((p) => p.images.length === 1 && p.images[0].startsWith('/media/'))).toBe(true);
  });

  it('answers one supplier: ?supplier= of another name lists nothing and finds no product', async () => {
    expect((await suite.app.http.get('/internal/catalog/products?supplier=main')).data).toMatchObject({ total: 12 });
    expect((await suite.app.http.get('/internal/catalog/products?supplier=other')).data).toMatchObject({ ok: true, items: [], total: 0 });
    const r = await suite.app.http.get('/internal/catalog/products/2?supplier=other');
    expect(r.status).toBe(404);
    expect(r.data).toMatchObject({ ok: false, error_code: 'product_not_found' });
    expect((await suite.app.http.get('/internal/catalog/products/9999')).data).toMatchObject({ error_code: 'product_not_found' });
  });

  it('a second sync fetches no image again; a changed URL is fetched, moves updated_at, the unused image goes at retention', async () => {
    const { sandbox } = suite;
    sandbox.media.resetStats();
    const again = await runSync(suite.app.http, 'full');
    expect(again).toMatchObject({ status: 'succeeded', images_fetched: 0, image_bytes: 0, skipped_images: [] });
    expect(sandbox.media.stats.requests).toBe(0);

    // a product written again (its price moved) and a new product, both with images already mirrored:
    // nothing is fetched, the stored files are named
    sandbox.catalog.setPrice(sandbox.catalog.getProduct(2)!.skus[0].sku_code, '777.00');
    const reused = sandbox.catalog.addProduct({
      images: ['/uploads/products/p5.png'],
      content: { en: '<img src="/uploads/products/p2.png">' },
    });
    const rewritten = await runSync(suite.app.http, 'incremental');
    expect(rewritten).toMatchObject({ status: 'succeeded', images_fetched: 0, skipped_images: [] });
    expect(sandbox.media.stats.requests).toBe(0);
    const p2 = `/media/${sha256(seededImage(sandbox, 2))}.png`;
    expect(await product(reused.id)).toMatchObject({
      images: [`/media/${sha256(seededImage(sandbox, 5))}.png`],
      content: { en: `<img src="${p2}">` },
    });
    expect((await product(2)).images).toEqual([p2]);

    const before = await product(3);
    const oldFile = before.images[0];
    sandbox.catalog.setProductMedia(3, { images: ['/uploads/products/p3-v2.png'] });
    const changed = await runSync(suite.app.http, 'incremental');
    expect(changed).toMatchObject({ status: 'succeeded', images_fetched: 1, skipped_images: [] });
    expect(sandbox.media.stats.requests).toBe(1);
    const after = await product(3);
    const newFile = `/media/${sha256(sandbox.media.image('/uploads/products/p3-v2.png'))}.png`;
    expect(after.images).toEqual([newFile]);
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    // announced to the shop once, like any catalog change
    expect(await productEvents()).toEqual(['product:3']);
    // changed_since finds it
    const since = await suite.app.http.get(`/internal/catalog/products?changed_since=${encodeURIComponent(before.updated_at)}`);
    expect((since.data as { items: ProductView[] }).items.map((p) => p.product_id)).toContain(3);

    const retention = suite.app.relay.app.get(RetentionService);
    retention.mediaGraceMs = 0;
    const report = await retention.runOnce();
    expect(report).toMatchObject({ outcome: 'done', media: { sources: 1, files: 1 } });
    expect((await media(oldFile)).status).toBe(404);
    expect((await media(newFile)).status).toBe(200);
    expect((await media((await product(2)).images[0])).status).toBe(200);
  });

  it('leaves out and reports every refused image, keeps the rest of the product, and the sync succeeds', async () => {
    const { sandbox } = suite;
    const relayHost = new URL(suite.app.url).host; // loopback, another port than the supplier's
    const bad = {
      notHttp: 'ftp://files.example.com/a.png',
      privateAddress: `http://${relayHost}/media/x.png`,
      redirect: '/uploads/bad/redirect.png',
      notImage: '/uploads/bad/page.png',
      huge: '/uploads/bad/huge.png',
      declaredHuge: '/uploads/bad/declared.png',
      missing: '/uploads/bad/missing.png',
      slow: '/uploads/bad/slow.png',
    };
    sandbox.media.set(bad.redirect, { kind: 'redirect', location: `http://${relayHost}/media/y.png` });
    sandbox.media.set(bad.notImage, { kind: 'type', contentType: 'text/html; charset=utf-8' });
    sandbox.media.set(bad.huge, { kind: 'stream', bytes: 50 * 1024 * 1024 });
    sandbox.media.set(bad.declaredHuge, { kind: 'stream', bytes: 1024 * 1024, declareLength: true });
    sandbox.media.set(bad.missing, { kind: 'status', status: 404 });
    sandbox.media.set(bad.slow, { kind: 'hang' });
    const good = '/uploads/good/ok.png';
    const added = sandbox.catalog.addProduct({
      images: [...Object.values(bad), good],
      content: { en: `<h2>Box</h2><img src="${bad.notHttp}" alt="a"><p>text</p><img alt="b" src="${good}" srcset="${good} 2x">` },
      tags: ['new'],
      seoMeta: { title: 'Box' },
    });
    sandbox.media.resetStats();

    const run = await runSync(suite.app.http, 'incremental');
    expect(run.status).toBe('succeeded');
    const origin = sandbox.url;
    expect(run.skipped_images).toEqual(
      expect.arrayContaining([
        { product_id: added.id, url: bad.notHttp, reason: 'not_http' },
        { product_id: added.id, url: bad.privateAddress, reason: 'private_address' },
        { product_id: added.id, url: `${origin}${bad.redirect}`, reason: 'private_address' },
        { product_id: added.id, url: `${origin}${bad.notImage}`, reason: 'not_an_image' },
        { product_id: added.id, url: `${origin}${bad.huge}`, reason: 'too_large' },
        { product_id: added.id, url: `${origin}${bad.declaredHuge}`, reason: 'too_large' },
        { product_id: added.id, url: `${origin}${bad.missing}`, reason: 'not_found' },
        { product_id: added.id, url: `${origin}${bad.slow}`, reason: 'timeout' },
      ]),
    );
    expect(run.skipped_images).toHaveLength(8);
    expect(run.images_fetched).toBe(1);

    const file = `/media/${sha256(sandbox.media.image(good))}.png`;
    const p = await product(added.id);
    expect(p).toMatchObject({ images: [file], tags: ['new'], seo_meta: { title: 'Box' }, listed: true });
    // the refused <img> is gone, the kept one names the relay's copy (its srcset too), the rest as it was
    expect(p.content).toEqual({ en: `<h2>Box</h2><p>text</p><img alt="b" src="${file}" srcset="${file} 2x">` });
    // nothing was asked of a private address: the relay's own port saw no image request
    expect(sandbox.media.requestsOf(bad.redirect)).toBe(1);
    // the endless body was stopped once over MEDIA_MAX_BYTES, not read to its end
    await waitFor(
      () => sandbox.media.stats.aborted,
      (n) => n >= 1,
      'the streamed body cut short',
    );
    expect(sandbox.media.stats.streamedBytes).toBeLessThan(20 * 1024 * 1024);
    // the other products are untouched, and a product with refused images is served
    expect((await product(2)).images).toHaveLength(1);
  });
});

describe('catalog products: MEDIA_MIRROR=false passes the upstream’s URLs through', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 4, seed: 3 } }, env: { MEDIA_MIRROR: 'false' } });

  it('shows the upstream’s images and content unchanged and fetches nothing', async () => {
    const run = await runSync(suite.app.http, 'full');
    expect(run).toMatchObject({ status: 'succeeded', images_fetched: 0, skipped_images: [] });
    expect(suite.sandbox.media.stats.requests).toBe(0);
    const p = (await suite.app.http.get('/internal/catalog/products/2')).data.product as ProductView;
    const upstream = suite.sandbox.catalog.getProduct(2)!;
    expect(p.images).toEqual(upstream.images);
    expect(p.content).toEqual(upstream.content);
    const tree = (await suite.app.http.get('/internal/catalog/categories')).data as {
      categories: Array<{ id: number; icon: string | null }>;
    };
    for (const c of tree.categories) expect(c.icon).toBe(suite.sandbox.catalog.categories().find((u) => u.id === c.id)!.icon);
  });
});

describe('catalog products: MEDIA_PUBLIC_URL names the mirrored images', () => {
  const suite = useAppSuite({
    sandbox: { catalog: { products: 2, seed: 3 } },
    env: { MEDIA_PUBLIC_URL: 'https://cdn.shop.example/media/' },
  });

  it('names every image by MEDIA_PUBLIC_URL + /<sha256>.<ext>', async () => {
    // two product images and the categories' icons
    const icons = new Set(
      suite.sandbox.catalog
        .categories()
        .map((c) => c.icon)
        .filter((i) => i !== ''),
    );
    expect(await runSync(suite.app.http, 'full')).toMatchObject({ status: 'succeeded', images_fetched: 2 + icons.size });
    const tree = (await suite.app.http.get('/internal/catalog/categories')).data as { categories: Array<{ icon: string | null }> };
    expect(
      tree.categories
        .map((c) => c.icon)
        .filter((i) => i !== '')
        .every((i) => i?.startsWith('https://cdn.shop.example/media/')),
    ).toBe(true);
    const p = (await suite.app.http.get('/internal/catalog/products/2')).data.product as ProductView;
    const file = `https://cdn.shop.example/media/${sha256(seededImage(suite.sandbox, 2))}.png`;
    expect(p.images).toEqual([file]);
    expect(p.content?.en).toBe(`<p>Details of product 2</p><p><img src="${file}" alt="product 2"></p>`);
  });
});

describe('catalog: no response the shop receives names the supplier (links, styles, icons, runs, orders, notifications)', () => {
  const suite = useAppSuite({
    sandbox: { catalog: { products: 4, seed: 3 } },
    env: { UPSTREAM_TIMEOUT_MS: '1500', SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/hooks', SHOP_WEBHOOK_SECRET: 'shop-secret' },
  });

  it('rewrites or removes every reference to the supplier’s origin, mirrors the icons, and answers null for a refused one', async () => {
    const { sandbox } = suite;
    const origin = sandbox.url;
    const host = new URL(origin).host;
    const tops = sandbox.catalog.categories().filter((c) => c.parent_id === 0);
    // icons: one absolute on the supplier's origin, one the supplier answers 404 for (the rest relative)
    sandbox.catalog.setCategoryIcon(tops[0].id, `${origin}/uploads/icons/absolute.png`);
    sandbox.catalog.setCategoryIcon(tops[1].id, '/uploads/icons/missing.png');
    sandbox.media.set('/uploads/icons/missing.png', { kind: 'status', status: 404 });
    sandbox.media.set('/uploads/products/missing.png', { kind: 'status', status: 404 });
    const abs = `${origin}/uploads/products/abs.png`;
    const added = sandbox.catalog.addProduct({
      images: [abs],
      content: {
        en:
          `<p><a href="${origin}/products/9" class="buy">buy</a> <a href="https://other.example/">other</a></p>` +
          `<img src="${abs}" srcset="${abs} 1x, /uploads/products/missing.png 2x" alt="a">` +
          `<div style="background-image: url(${abs})" data-zoom="${origin}/uploads/zoom.png">z</div>` +
          `<form action="${origin}/buy"><input type="image" src="/uploads/products/btn.png"></form><iframe src="//${host}/embed"></iframe>`,
      },
    });

    const run = await runSync(suite.app.http, 'full');
    expect(run.status).toBe('succeeded');
    expect(run.skipped_images).toEqual(
      expect.arrayContaining([
        { product_id: null, category_id: tops[1].id, url: `${origin}/uploads/icons/missing.png`, reason: 'not_found' },
        { product_id: added.id, url: `${origin}/uploads/products/missing.png`, reason: 'not_found' },
      ]),
    );

    const file = (path: string) => `/media/${sha256(sandbox.media.image(path))}.png`;
    const p = (await suite.app.http.get(`/internal/catalog/products/${added.id}`)).data.product as ProductView;
    expect(p.content).toEqual({
      en:
        `<p><a  class="buy">buy</a> <a href="https://other.example/">other</a></p>` +
        `<img src="${file('/uploads/products/abs.png')}"  alt="a">` +
        `<div style="background-image: url(&quot;${file('/uploads/products/abs.png')}&quot;)" >z</div>` +
        `<form ><input type="image" src="${file('/uploads/products/btn.png')}"></form><iframe ></iframe>`,
    });
    // the seeded rich page: its link removed, its srcset, style and poster on the relay's copy, the video's source removed
    const img4 = file('/uploads/products/p4.png');
    expect(((await suite.app.http.get('/internal/catalog/products/4')).data.product as ProductView).content?.en).toBe(
      `<p>Details of product 4</p><p><img src="${img4}" alt="product 4"></p>` +
        `<p><a  class="more">More</a> · <a href="#top">Top</a></p>` +
        `<div style="background: url(&quot;${img4}&quot;) no-repeat"><picture><source srcset="${img4} 1x"><img src="${img4}" ` +
        `srcset="${img4} 2x" alt=""></picture></div>` +
        `<video poster="${img4}" controls><source  type="video/mp4">Video</video>`,
    );
    const tree = (await suite.app.http.get('/internal/catalog/categories')).data as {
      categories: Array<{ id: number; icon: string | null }>;
    };
    expect(tree.categories.find((c) => c.id === tops[0].id)!.icon).toBe(file('/uploads/icons/absolute.png'));
    expect(tree.categories.find((c) => c.id === tops[1].id)!.icon).toBeNull();

    // an order, so that the order answers and their notifications are scanned too
    const sku = sandbox.catalog.getProduct(1)!.skus[0].sku_code;
    expect((await suite.app.http.post('/internal/orders', { shop_order_no: 'SO-MEDIA-1', sku_code: sku, quantity: 1 })).status).toBe(201);
    await waitForOrder(suite.app.http, 'SO-MEDIA-1', (o) => o.upstream_order_id !== null);

    const paths = [
      '/internal/catalog/products?page_size=500',
      `/internal/catalog/products/${added.id}`,
      '/internal/catalog/products/4',
      '/internal/catalog/skus?page_size=500',
      `/internal/catalog/skus/${sku}`,
      '/internal/catalog/categories',
      '/internal/catalog/sync-runs',
      `/internal/catalog/sync-runs/${run.run_id}`,
      '/internal/orders',
      '/internal/orders/SO-MEDIA-1',
      '/internal/orders/SO-MEDIA-1/events',
    ];
    // a run's skipped_images[].url is the upstream's URL by contract (the operator's diagnosis of a refusal)
    const withoutSkippedUrls = (v: unknown): unknown =>
      JSON.parse(JSON.stringify(v), (k, x: unknown) =>
        k === 'skipped_images' && Array.isArray(x) ? x.map((i: Record<string, unknown>) => ({ ...i, url: '(upstream)' })) : x,
      );
    for (const path of paths) {
      const a = await suite.app.http.get(path);
      expect([path, a.status]).toEqual([path, 200]);
      const text = JSON.stringify(withoutSkippedUrls(a.data));
      expect([path, text.includes(host), text.includes('/uploads/')]).toEqual([path, false, false]);
    }
    // the shop's notifications (written to the outbox)
    const events = await suite.db.query<{ event_type: string; payload: unknown }>(
      `SELECT event_type, payload FROM outbox_events ORDER BY id`,
    );
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) expect([e.event_type, JSON.stringify(e.payload).includes(host)]).toEqual([e.event_type, false]);
  });
});

(process.env.TEST_DATABASE_URL ? describe : describe.skip)('products changed_since: the write fence of the SKU list (PostgreSQL)', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 3, seed: 3 } } });
  const changed = async (since: string) =>
    (
      (await suite.app.http.get(`/internal/catalog/products?changed_since=${encodeURIComponent(since)}`)).data as { items: ProductView[] }
    ).items.map((p) => p.product_id);

  it('a later write is held back while an earlier-stamped one is still open, so a follower misses neither', async () => {
    expect(await runSync(suite.app.http, 'full')).toMatchObject({ status: 'succeeded' });
    const all = ((await suite.app.http.get('/internal/catalog/products')).data as { items: ProductView[] }).items;
    const cursor = all
      .map((p) => p.updated_at)
      .sort()
      .at(-1)!;
    const ds = suite.app.relay.app.get(DataSource);
    const repo = suite.app.relay.app.get(ProductRepository);
    // the database's clock is past the cursor's millisecond, so the writes below are stamped after it
    await waitFor(
      async () => ((await ds.query(`SELECT date_trunc('milliseconds', clock_timestamp()) AS t`)) as Array<{ t: Date }>)[0].t.getTime(),
      (t) => t > Date.parse(cursor),
      'the clock past the cursor',
    );

    // write A (product 1) begins first and stays open; write B (product 2) begins later and commits
    const a = ds.createQueryRunner();
    await a.connect();
    await a.startTransaction();
    try {
      await repo.touch(a.manager, 'main', 1, await repo.transactionNow(a.manager));
      await ds.transaction(async (em) => repo.touch(em, 'main', 2, await repo.transactionNow(em)));
      // B is stamped after A's start: not shown while A is open (a follower would move past A's stamp)
      expect(await changed(cursor)).toEqual([]);
      await a.commitTransaction();
    } finally {
      await a.release();
    }
    expect(await changed(cursor)).toEqual([1, 2]);
  });
});

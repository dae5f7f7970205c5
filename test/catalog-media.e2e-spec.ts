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
import { RetentionService } from '../src/retention/retention.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
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
    env: { UPSTREAM_TIMEOUT_MS: '1500', MEDIA_MAX_BYTES: '200000', SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/hooks', SHOP_WEBHOOK_SECRET: 'shop-secret' },
    instances: 2,
  });
  const productEvents = async () =>
    (await suite.db.query<{ subject: string; payload: Record<string, unknown> }>(`SELECT subject, payload FROM outbox_events WHERE event_type = 'product.changed' ORDER BY id`)).map(
      (r) => r.subject,
    );
  const product = async (id: number, app = suite.app): Promise<ProductView> => {
    const r = await app.http.get(`/internal/catalog/products/${id}`);
    expect(r.status).toBe(200);
    return (r.data as { product: ProductView }).product;
  };
  /** A mirrored image through a replica, without the token (as a browser asks for it). */
  const media = (path: string, app = suite.app) => axios.get<Buffer>(`${app.url}${path}`, { responseType: 'arraybuffer', validateStatus: () => true });

  it('stores the supplier’s bytes, names them in `images` and in the content’s <img>, and serves them from every replica', async () => {
    const { sandbox, apps } = suite;
    const run = await runSync(suite.app.http, 'full');
    expect(run).toMatchObject({ status: 'succeeded', products_seen: 12, skipped_images: [], images_fetched: 12 });
    expect(run.image_bytes).toBe(Array.from({ length: 12 }, (_, i) => seededImage(sandbox, i + 1).length).reduce((a, b) => a + b, 0));
    // one download per image URL: product 2's content shows its image again
    expect(sandbox.media.stats.requests).toBe(12);

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
    // the second replica's answer is its own read of the database: no request reached the sandbox
    expect(sandbox.media.stats.requests).toBe(12);
    expect((await media(`/media/${'0'.repeat(64)}.png`)).status).toBe(404);
    // new products are announced by their SKUs' events: completing their images announces nothing more
    expect(await productEvents()).toEqual([]);
  });

  it('no answer the shop receives names the supplier’s host', async () => {
    const { sandbox } = suite;
    const host = new URL(sandbox.url).host;
    const answers = await Promise.all(
      ['/internal/catalog/products?page_size=500', '/internal/catalog/products/2', '/internal/catalog/skus?page_size=500', '/internal/catalog/categories', '/internal/catalog/skus/2:SKU-00002-1'].map(
        (path) => suite.app.http.get(path),
      ),
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

  it('a second sync fetches no image again; a changed URL is fetched, moves updated_at, and the unused image goes with the retention job', async () => {
    const { sandbox } = suite;
    sandbox.media.resetStats();
    const again = await runSync(suite.app.http, 'full');
    expect(again).toMatchObject({ status: 'succeeded', images_fetched: 0, image_bytes: 0, skipped_images: [] });
    expect(sandbox.media.stats.requests).toBe(0);

    // a product written again (its price moved) and a new product, both with images already mirrored:
    // nothing is fetched, the stored files are named
    sandbox.catalog.setPrice(sandbox.catalog.getProduct(2)!.skus[0].sku_code, '777.00');
    const reused = sandbox.catalog.addProduct({ images: ['/uploads/products/p5.png'], content: { en: '<img src="/uploads/products/p2.png">' } });
    const rewritten = await runSync(suite.app.http, 'incremental');
    expect(rewritten).toMatchObject({ status: 'succeeded', images_fetched: 0, skipped_images: [] });
    expect(sandbox.media.stats.requests).toBe(0);
    const p2 = `/media/${sha256(seededImage(sandbox, 2))}.png`;
    expect(await product(reused.id)).toMatchObject({ images: [`/media/${sha256(seededImage(sandbox, 5))}.png`], content: { en: `<img src="${p2}">` } });
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
    // the refused <img> is gone, the kept one names the relay's copy (its srcset dropped), the rest as it was
    expect(p.content).toEqual({ en: `<h2>Box</h2><p>text</p><img alt="b" src="${file}" >` });
    // nothing was asked of a private address: the relay's own port saw no image request
    expect(sandbox.media.requestsOf(bad.redirect)).toBe(1);
    // the endless body was stopped once over MEDIA_MAX_BYTES, not read to its end
    await waitFor(() => sandbox.media.stats.aborted, (n) => n >= 1, 'the streamed body cut short');
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
  });
});

describe('catalog products: MEDIA_PUBLIC_URL names the mirrored images', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 2, seed: 3 } }, env: { MEDIA_PUBLIC_URL: 'https://cdn.shop.example/media/' } });

  it('names every image by MEDIA_PUBLIC_URL + /<sha256>.<ext>', async () => {
    expect(await runSync(suite.app.http, 'full')).toMatchObject({ status: 'succeeded', images_fetched: 2 });
    const p = (await suite.app.http.get('/internal/catalog/products/2')).data.product as ProductView;
    const file = `https://cdn.shop.example/media/${sha256(seededImage(suite.sandbox, 2))}.png`;
    expect(p.images).toEqual([file]);
    expect(p.content?.en).toBe(`<p>Details of product 2</p><p><img src="${file}" alt="product 2"></p>`);
  });
});

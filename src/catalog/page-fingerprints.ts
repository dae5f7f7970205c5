/**
 * What the pages of a full pass held, remembered by the SHA-256 digest of their bodies for the next
 * full pass. The digest comes from the upstream client's `listProductsRecognizing`, which offers it to
 * `unchangedPage` (as its PageRecognizer) before it parses a body and gives it with a page it parsed.
 *
 * A product's fingerprint is a function of its data, and a page's products a function of its bytes.
 * So a page whose body is byte for byte one the previous complete pass received holds the same
 * products with the same fingerprints:
 * - when each of them equals the fingerprint stored at the start of this pass (`known`), the page is
 *   unchanged: it is not even parsed, and its products are only counted as seen (`unchangedPage`);
 * - else its fingerprints come from memory (`addPage`) and only the products whose fingerprint moved
 *   go to the database, as for any page.
 * A re-sync of an unchanged catalog then parses no page and computes no fingerprint. A page with a
 * product left out for its shape (`skipped`) is never remembered: it is parsed on every pass.
 *
 * The memory only saves work. What is compared is unchanged (the fingerprints stored at the start of
 * the pass, then the database's), so it can never make a pass skip a write: its worst case is the
 * cost it had without it.
 */
import type { UpstreamProduct, UpstreamProductPage } from '../upstream/upstream.types.js';
import type { ListedPage, UnchangedProduct } from './product-pager.js';
import { productFingerprint } from './sku-diff.js';

/** A page's body as remembered: its products (id, number of SKUs, fingerprint) and its paging fields. */
interface PageRecord {
  products: UnchangedProduct[];
  fingerprints: string[];
  total: number;
  page: number;
  pageSize: number;
}

export class PageFingerprints {
  /** Digest → what the page held: the previous complete pass's pages. */
  private previous = new Map<string, PageRecord>();
  /** The same for the pass under way. */
  private current = new Map<string, PageRecord>();
  private currentProducts = 0;
  /** The products of the pages parsed in this pass (by identity): their fingerprint. */
  private byProduct = new WeakMap<UpstreamProduct, string>();
  /**
   * This pass's pages: unchanged (not parsed), parsed with their fingerprints from memory, parsed and
   * fingerprinted; and `beforeIndex`, the pages asked about before the stored fingerprints were read
   * (parsed whatever they hold: how many depends on timing).
   */
  readonly stats = { unchanged: 0, remembered: 0, computed: 0, beforeIndex: 0 };

  /** `maxProducts`: a pass with more products keeps no more pages (the memory is ~100 bytes a product). */
  constructor(private readonly maxProducts: number) {}

  /** A new pass (what an incomplete pass saw is dropped). */
  startPass(): void {
    this.current = new Map();
    this.currentProducts = 0;
    this.byProduct = new WeakMap();
    this.stats.unchanged = 0;
    this.stats.remembered = 0;
    this.stats.computed = 0;
    this.stats.beforeIndex = 0;
  }

  /**
   * The page for a body with this digest when it is unchanged: received before, and each of its
   * products' fingerprints equal to its entry in `known` (the fingerprints stored at the start of the
   * pass). Its products come as `unchanged`, `items` is empty. Undefined otherwise (to be parsed).
   */
  unchangedPage(digest: string, known: Map<number, string> | null): ListedPage | undefined {
    if (known === null) {
      this.stats.beforeIndex++;
      return undefined;
    }
    const record = this.lookup(digest);
    if (record === undefined) return undefined;
    for (let i = 0; i < record.products.length; i++) {
      if (known.get(record.products[i].id) !== record.fingerprints[i]) return undefined;
    }
    this.keep(digest, record);
    this.stats.unchanged++;
    return { items: [], unchanged: record.products, total: record.total, page: record.page, page_size: record.pageSize };
  }

  /** A page of the pass, as parsed (with its body's `digest`): its products' fingerprints, from memory when its body was seen. */
  addPage(page: UpstreamProductPage, digest?: string): void {
    const items = page.items;
    let record = digest === undefined ? undefined : this.lookup(digest);
    if (record !== undefined && record.fingerprints.length === items.length) {
      this.stats.remembered++;
    } else {
      record = {
        products: items.map((p) => ({ id: p.id, skus: p.skus.length })),
        fingerprints: items.map((p) => productFingerprint(p)),
        total: page.total,
        page: page.page,
        pageSize: page.page_size,
      };
      this.stats.computed++;
    }
    for (let i = 0; i < items.length; i++) this.byProduct.set(items[i], record.fingerprints[i]);
    // A page with a product left out for its shape is not remembered: the next pass parses it again,
    // so that it sees that product (reported again, or stored once its shape is right).
    if (digest !== undefined && !page.skipped?.length) this.keep(digest, record);
  }

  /** The fingerprint of a product of a page parsed in this pass (computed for any other). */
  fingerprintOf = (product: UpstreamProduct): string => this.byProduct.get(product) ?? productFingerprint(product);

  /** The pass is complete: its pages are remembered for the next one, in place of the previous pass's. */
  completePass(): void {
    this.previous = this.current;
    this.current = new Map();
    this.currentProducts = 0;
    this.byProduct = new WeakMap();
  }

  private lookup(digest: string): PageRecord | undefined {
    return this.current.get(digest) ?? this.previous.get(digest);
  }

  /** Remembers a page of this pass for the next one (within maxProducts). */
  private keep(digest: string, record: PageRecord): void {
    if (this.current.has(digest) || this.currentProducts + record.products.length > this.maxProducts) return;
    this.current.set(digest, record);
    this.currentProducts += record.products.length;
  }
}

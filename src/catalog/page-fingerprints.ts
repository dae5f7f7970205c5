/**
 * The fingerprints of a full pass's products, remembered by the listing page they came in.
 *
 * A product's fingerprint is a function of its data. So a page whose body is byte for byte one seen
 * in the previous complete pass (same SHA-256 digest) holds the same products with the same
 * fingerprints: they are taken from memory, and not computed again. A re-sync of an unchanged catalog
 * computes no fingerprint at all; a page with one changed product is computed in full, as before.
 *
 * This only saves the computation. What a fingerprint is compared with (the one stored at the start
 * of the pass, then the database's) is unchanged, so the memory can never make a pass skip a write:
 * its worst case is the cost it had without it.
 */
import type { UpstreamProduct, UpstreamProductPage } from '../upstream/upstream.types.js';
import { productFingerprint } from './sku-diff.js';

export class PageFingerprints {
  /** Digest → fingerprints of the page's products in order: the previous complete pass's pages. */
  private previous = new Map<string, string[]>();
  /** The same for the pass under way. */
  private current = new Map<string, string[]>();
  private currentProducts = 0;
  /** The products of the pages fetched in this pass (by identity): their fingerprint. */
  private byProduct = new WeakMap<UpstreamProduct, string>();
  /** Pages whose fingerprints came from memory, and those computed, in this pass. */
  readonly stats = { remembered: 0, computed: 0 };

  /** `maxProducts`: a pass with more products keeps no more pages (the memory is ~100 bytes a product). */
  constructor(private readonly maxProducts: number) {}

  /** A new pass (what an incomplete pass saw is dropped). */
  startPass(): void {
    this.current = new Map();
    this.currentProducts = 0;
    this.byProduct = new WeakMap();
    this.stats.remembered = 0;
    this.stats.computed = 0;
  }

  /** A page of the pass, as fetched (with its `digest`): its products' fingerprints, from memory when its body was seen. */
  addPage(page: UpstreamProductPage): void {
    const items = page.items;
    const digest = page.digest;
    let fps = digest === undefined ? undefined : (this.current.get(digest) ?? this.previous.get(digest));
    if (fps !== undefined && fps.length === items.length) {
      this.stats.remembered++;
    } else {
      fps = items.map((p) => productFingerprint(p));
      this.stats.computed++;
    }
    for (let i = 0; i < items.length; i++) this.byProduct.set(items[i], fps[i]);
    if (digest !== undefined && this.currentProducts + items.length <= this.maxProducts && !this.current.has(digest)) {
      this.current.set(digest, fps);
      this.currentProducts += items.length;
    }
  }

  /** The fingerprint of a product of a page added in this pass (computed for any other). */
  fingerprintOf = (product: UpstreamProduct): string => this.byProduct.get(product) ?? productFingerprint(product);

  /** The pass is complete: its pages are remembered for the next one, in place of the previous pass's. */
  completePass(): void {
    this.previous = this.current;
    this.current = new Map();
    this.currentProducts = 0;
    this.byProduct = new WeakMap();
  }
}

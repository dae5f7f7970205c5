/** One SKU: its fields, its price under the rules, its product's images and content, and its change history. */
import { api, enc } from '../api.js';
import { Margin, skuTitle } from '../catalog-data.js';
import { html } from '../html.js';
import { href } from '../router.js';
import { sanitizeHtml } from '../sanitize.js';
import { supplierOf, type Product, type ProductAnswer, type SkuAnswer, type SkuChangeList } from '../types.js';
import { Badge, Card, ErrorBox, Facts, Loading, Money, pickText, Time, useLoad } from '../ui.js';

function show(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** The product's images (the relay's mirrored copies) and its content, sanitized. */
function ProductMedia({ product }: { product: Product }) {
  const content = pickText(product.content ?? null);
  return html`<div class="product-media" data-testid="product-media">
    ${
      product.images.length > 0
        ? html`<div class="product-images">
            ${product.images.map(
              (src) => html`<a href=${src} target="_blank" rel="noopener noreferrer"><img src=${src} alt="" loading="lazy" /></a>`,
            )}
          </div>`
        : html`<p class="muted">No images.</p>`
    }
    ${product.tags.length > 0 ? html`<p>${product.tags.map((t) => html`<${Badge} value=${t} tone="info" /> `)}</p>` : null}
    ${
      content
        ? html`<div class="product-content" dangerouslySetInnerHTML=${{ __html: sanitizeHtml(content) }}></div>`
        : html`<p class="muted">No content.</p>`
    }
  </div>`;
}

export function SkuPage({ skuCode }: { skuCode: string }) {
  const base = `/internal/catalog/skus/${enc(skuCode)}`;
  const sku = useLoad(async () => (await api.get<SkuAnswer>(base)).sku, [skuCode]);
  const changes = useLoad(async () => {
    const body = await api.get<SkuChangeList>(`${base}/changes`, { page_size: 500 });
    return { rows: body.items, total: body.total };
  }, [skuCode]);
  const s = sku.data;
  const productId = s?.product_id;
  const product = useLoad(
    async () => (productId === undefined ? null : (await api.get<ProductAnswer>(`/internal/catalog/products/${productId}`)).product),
    [productId],
  );
  return html`<div class="page sku">
    <p class="back"><a href="#/catalog">‹ Catalog</a></p>
    <div class="title-row">
      <h1>
        SKU <code>${s ? s.sku_code : skuCode}</code>${s ? html` <small class="muted" data-field="sku_key">${s.sku_key}</small>` : null}
      </h1>
      ${
        s
          ? html`${
              s.available ? html`<${Badge} value="available" tone="good" />` : html`<${Badge} value="unavailable" tone="bad" />`
            }${s.listed ? null : html`<${Badge} value="unlisted" tone="muted" />`}`
          : null
      }
      <span class="spacer"></span>
      ${s ? html`<a class="btn" href=${href('/pricing', { sku_code: s.sku_code, sku_key: s.sku_key })}>Pricing rule…</a>` : null}
    </div>
    <${ErrorBox} error=${sku.error} />
    ${!s && !sku.error ? html`<${Loading} what="the SKU" />` : null}
    ${
      s
        ? html`<div class="grid two">
            <${Card} title=${skuTitle(s)}>
              <${Facts}
                rows=${[
                  ['Cost', html`<${Money} amount=${s.cost_price} currency=${s.currency} />`, 'cost_price'],
                  ['Sale price', html`<${Money} amount=${s.sale_price} currency=${s.currency} />`, 'sale_price'],
                  ['Margin', html`<${Margin} cost=${s.cost_price} sale=${s.sale_price} />`],
                  ['Original price', s.original_price ? html`<${Money} amount=${s.original_price} currency=${s.currency} />` : null],
                  ['Member price', s.member_price ? html`<${Money} amount=${s.member_price} currency=${s.currency} />` : null],
                  ['Stock', html`<${Badge} value=${s.stock_status} /> ${s.stock_status === 'unlimited' ? '' : s.stock_quantity}`, 'stock'],
                ]}
              />
            <//>
            <${Card} title="Upstream">
              <${Facts}
                rows=${[
                  [
                    'Supplier',
                    supplierOf(s) ? html`<a href=${href('/catalog', { supplier: supplierOf(s) })}>${supplierOf(s)}</a>` : null,
                    'supplier',
                  ],
                  ['Product id', String(s.product_id)],
                  ['SKU id', String(s.upstream_sku_id)],
                  ['Category', html`<a href=${href('/catalog', { category_id: String(s.category_id) })}>${String(s.category_id)}</a>`],
                  ['Fulfillment', s.fulfillment_type],
                  [
                    'Manual form',
                    s.manual_form_schema ? html`<pre class="json small">${JSON.stringify(s.manual_form_schema, null, 1)}</pre>` : null,
                  ],
                  ['Updated', html`<${Time} at=${s.updated_at} />`],
                ]}
              />
            <//>
          </div>`
        : null
    }
    ${
      s
        ? html`<${Card} title="Product">
            <${ErrorBox} error=${product.error} />
            ${
              product.data
                ? html`<${ProductMedia} product=${product.data} />`
                : !product.error
                  ? html`<${Loading} what="the product" />`
                  : null
            }
          <//>`
        : null
    }
    <${Card} title=${`Change history${changes.data ? ` (${changes.data.total})` : ''}`}>
      <${ErrorBox} error=${changes.error} />
      ${!changes.data && !changes.error ? html`<${Loading} what="the history" />` : null}
      ${
        changes.data
          ? html`<table class="table" data-testid="sku-changes">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Field</th>
                  <th>Kind</th>
                  <th>Old → new</th>
                  <th>Source</th>
                  <th>Sync run</th>
                </tr>
              </thead>
              <tbody>
                ${
                  changes.data.rows.length === 0
                    ? html`<tr>
                        <td colspan="6" class="muted">No changes recorded.</td>
                      </tr>`
                    : null
                }
                ${[...changes.data.rows]
                  .sort((a, b) => Date.parse(b.changed_at) - Date.parse(a.changed_at))
                  .map(
                    (c) =>
                      html`<tr data-field=${c.field} data-kind=${c.kind}>
                        <td><${Time} at=${c.changed_at} /></td>
                        <td><code>${c.field}</code></td>
                        <td><${Badge} value=${c.kind} tone="info" /></td>
                        <td class="change">
                          ${
                            c.kind === 'created'
                              ? html`<span class="muted">new SKU</span>`
                              : html`<span class="old">${show(c.old)}</span> → <span class="new">${show(c.new)}</span>`
                          }
                        </td>
                        <td>${c.source}</td>
                        <td>${c.run_id ? html`<code class="small">${c.run_id}</code>` : html`<span class="muted">—</span>`}</td>
                      </tr>`,
                  )}
              </tbody>
            </table>`
          : null
      }
    <//>
  </div>`;
}

/**
 * The catalog's API answers: `GET /products` (pages, the `page_size` cap, the undocumented
 * `updated_after` filter as the faults shape it, and the listing faults that act once a page has been
 * served) and `GET /products/{id}`.
 *
 * Newer Dujiao-Next servers (upstream_catalog.go; options `listsInactiveProducts` and
 * `servesWithdrawnProducts`, on under profile `dujiao-next`): `GET /products?include_inactive=true`
 * (exactly `true`) lists the delisted products too, with `is_active: false`, and every page echoes
 * `includes_inactive`; `GET /products/{id}` of a delisted product answers 200 with `is_active: false`,
 * and 404 `product_not_found` only for a deleted one. Otherwise a delisted product is 404
 * `product_unavailable` and the parameter is ignored.
 */
import type { SandboxCatalog } from './sandbox-catalog.js';
import type { SandboxConfig } from './sandbox-config.js';
import type { SandboxFaults } from './sandbox-faults.js';
import { ApiError, bad, parseQueryInt, type Answer } from './sandbox-http.js';

const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function listProductsAnswer(
  catalog: SandboxCatalog,
  faults: SandboxFaults,
  config: Readonly<SandboxConfig>,
  query: URLSearchParams,
): Answer {
  const page = parseQueryInt(query.get('page'), 1, 'page');
  const size = Math.min(parseQueryInt(query.get('page_size'), 20, 'page_size'), config.pageSizeCap);
  let after: number | undefined;
  const rawAfter = query.get('updated_after');
  if (rawAfter !== null && rawAfter !== '') {
    // An unencoded '+' of an offset arrives as a space.
    const text = rawAfter.replace(' ', '+');
    after = RFC3339_RE.test(text) ? Date.parse(text) : NaN;
    if (Number.isNaN(after)) throw bad('updated_after must be an RFC 3339 date-time');
  }
  const filter = faults.updatedAfterFilter;
  const includeInactive = config.listsInactiveProducts && query.get('include_inactive') === 'true';
  const { items, total, firstId } = catalog.page(
    page,
    size,
    filter === 'ignored' ? undefined : after,
    filter === 'inclusive_seconds',
    includeInactive,
  );
  const echo = config.listsInactiveProducts ? `,"includes_inactive":${includeInactive}` : '';
  const body = `{"ok":true,"items":[${items.join(',')}],"total":${total},"page":${page},"page_size":${size}${echo}}`;
  if (faults.takeInsertAtFront(page)) catalog.insertAtFront();
  if (faults.takeWithdraw(page) && firstId !== null) catalog.delistProduct(firstId);
  return { status: 200, body };
}

export function productAnswer(catalog: SandboxCatalog, config: Readonly<SandboxConfig>, id: number): Answer {
  const p = catalog.productRecord(id);
  if (!p) throw new ApiError(404, 'product_not_found', 'no such product');
  if (!p.listed && !config.servesWithdrawnProducts) throw new ApiError(404, 'product_unavailable', 'the product is withdrawn');
  return { status: 200, body: `{"ok":true,"product":${catalog.productJson(p)}}` };
}

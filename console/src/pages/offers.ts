/**
 * Offers (CONTRACT §11): one shop product over several suppliers' SKUs. The list shows each offer's
 * sale price, availability and its sources' cost range; an offer's page edits it (title, routing,
 * the operator's sale price, 1–10 sources in order) and shows each source's live cost, stock and the
 * margin the offer's sale price leaves over it. A code no offer has opens an empty offer to create.
 *
 * The SKU picker of a source lists its supplier's listed SKUs (`GET /internal/catalog/skus?supplier=`);
 * where the catalog cannot list them, the `sku_key` is typed in and the service checks it on save.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, enc } from '../api.js';
import { Margin, skuTitle } from '../catalog-data.js';
import { html } from '../html.js';
import { compareDec, isDecimal } from '../money.js';
import { href, navigate } from '../router.js';
import type { Offer, OfferAnswer, OfferList, OfferSource, PutOfferBody, Sku, SkuList } from '../types.js';
import { ago, Badge, Card, type Column, Confirm, ErrorBox, ListTable, Loading, Money, useLoad } from '../ui.js';

const PAGE_SIZE = 100;
const MAX_SOURCES = 10;
const CODE_RE = /^[A-Za-z0-9._:-]{1,64}$/;
const OFFER_COLUMNS: Column[] = [
  'Code',
  'Title',
  'Routing',
  'Sources',
  ['Cost', 'num'],
  ['Sale price', 'num'],
  ['Margin', 'num'],
  'State',
  'Updated',
];

/** The lowest and highest known cost of the sources. */
function costRange(sources: OfferSource[]): [string, string] | null {
  const costs = sources.map((s) => s.cost_price).filter((c): c is string => c !== null && isDecimal(c));
  if (costs.length === 0) return null;
  const sorted = [...costs].sort(compareDec);
  return [sorted[0], sorted[sorted.length - 1]];
}

/** The highest cost among the available sources (what the default sale price covers), else among all. */
function highestCost(sources: OfferSource[]): string | null {
  const pick = (list: OfferSource[]) => costRange(list)?.[1] ?? null;
  return pick(sources.filter((s) => s.available)) ?? pick(sources);
}

export function OffersPage({ query }: { query: URLSearchParams }) {
  const available = query.get('available') ?? '';
  const page = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const [code, setCode] = useState('');
  const list = useLoad(
    () => api.get<OfferList>('/internal/offers', { available: available || undefined, page, page_size: PAGE_SIZE }),
    [available, page],
  );
  const go = (patch: Record<string, string | number | undefined>) => navigate(href('/offers', { available, ...patch }));
  const codeOk = CODE_RE.test(code.trim());

  return html`<div class="page offers">
    <h1>Offers</h1>
    <${Card}>
      <form
        class="filters"
        onSubmit=${(e: Event) => {
          e.preventDefault();
          if (codeOk) navigate(href(`/offers/${enc(code.trim())}`));
        }}
      >
        <label
          >Available
          <select
            name="available"
            value=${available}
            onChange=${(e: Event) => go({ available: (e.target as HTMLSelectElement).value, page: undefined })}
          >
            <option value="">any</option>
            <option value="true">yes</option>
            <option value="false">no</option>
          </select></label
        >
        <span class="spacer"></span>
        <label
          >Offer code
          <input
            name="new-code"
            placeholder="e.g. steam-wallet-50"
            value=${code}
            onInput=${(e: Event) => setCode((e.target as HTMLInputElement).value)}
        /></label>
        <button class="btn primary" type="submit" disabled=${!codeOk}>Open or create</button>
      </form>
    <//>
    <${Card}>
      <${ListTable}
        testid="offers-table"
        what="offers"
        columns=${OFFER_COLUMNS}
        items=${list.data?.items}
        error=${list.error}
        row=${(o: Offer) => OfferRow({ offer: o })}
        empty="No offers."
        paging=${list.data}
        onPage=${(p: number) => go({ page: p })}
      />
    <//>
  </div>`;
}

function OfferRow({ offer: o }: { offer: Offer }) {
  const range = costRange(o.sources);
  const top = highestCost(o.sources);
  return html`<tr data-offer=${o.code}>
    <td>
      <a href=${href(`/offers/${enc(o.code)}`)}><code>${o.code}</code></a>
    </td>
    <td class="title">${o.title ?? html`<span class="muted">—</span>`}</td>
    <td>${o.routing}</td>
    <td class="small">${o.sources.map((s) => s.supplier).join(' › ')}</td>
    <td class="num nowrap">
      ${range ? (range[0] === range[1] ? range[0] : `${range[0]}–${range[1]}`) : html`<span class="muted">—</span>`}
    </td>
    <td class="num" data-field="sale_price"><${Money} amount=${o.sale_price} currency=${o.currency} /></td>
    <td class="num">${top && o.sale_price ? html`<${Margin} cost=${top} sale=${o.sale_price} />` : html`<span class="muted">—</span>`}</td>
    <td>${o.available ? html`<${Badge} value="available" tone="good" />` : html`<${Badge} value="unavailable" tone="bad" />`}</td>
    <td class="nowrap" title=${o.updated_at}>${ago(o.updated_at)}</td>
  </tr>`;
}

interface DraftSource {
  key: number;
  supplier: string;
  sku_key: string;
}

interface Draft {
  title: string;
  routing: 'priority' | 'cheapest';
  sale_price: string;
  sources: DraftSource[];
}

let nextKey = 1;
const draftOf = (o: Offer | null): Draft => ({
  title: o?.title ?? '',
  routing: (o?.routing as Draft['routing'] | undefined) ?? 'priority',
  // The answer does not tell the operator's price from the rules' one: left blank, the rules decide.
  sale_price: '',
  sources: (o?.sources ?? [{ supplier: '', sku_key: '' }]).map((s) => ({ key: nextKey++, supplier: s.supplier, sku_key: s.sku_key })),
});

function toBody(d: Draft): PutOfferBody {
  return {
    title: d.title.trim() === '' ? null : d.title.trim(),
    routing: d.routing,
    sources: d.sources.map((s) => ({ supplier: s.supplier.trim(), sku_key: s.sku_key.trim() })),
    sale_price: d.sale_price.trim() === '' ? null : d.sale_price.trim(),
  };
}

/** The suppliers' names for the pickers: the suppliers API's, and those the sources name. */
async function loadSuppliers(): Promise<string[]> {
  try {
    const body = await api.get<{ items: Array<{ name: string }> }>('/internal/suppliers');
    return body.items.map((s) => s.name);
  } catch (e) {
    if (e instanceof ApiError && e.status !== 401) return [];
    throw e;
  }
}

/** A supplier's listed SKUs for the picker, or the error that kept them. */
const skuLists = new Map<string, Promise<Sku[]>>();
function loadSkus(supplier: string): Promise<Sku[]> {
  let p = skuLists.get(supplier);
  if (!p) {
    p = api.get<SkuList>('/internal/catalog/skus', { supplier, listed: true, page_size: 500 }).then((b) => b.items);
    p.catch(() => skuLists.delete(supplier));
    skuLists.set(supplier, p);
  }
  return p;
}

function SourceRow({
  index,
  source,
  live,
  salePrice,
  count,
  onChange,
  onMove,
  onRemove,
}: {
  index: number;
  source: DraftSource;
  live: OfferSource | undefined;
  salePrice: string | null;
  count: number;
  onChange: (s: DraftSource) => void;
  onMove: (by: number) => void;
  onRemove: () => void;
}) {
  const supplier = source.supplier.trim();
  const [skus, setSkus] = useState<{ list: Sku[]; error: unknown }>({ list: [], error: null });
  useEffect(() => {
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(supplier)) return setSkus({ list: [], error: null });
    let live = true;
    loadSkus(supplier).then(
      (list) => live && setSkus({ list, error: null }),
      (error: unknown) => live && setSkus({ list: [], error }),
    );
    return () => {
      live = false;
    };
  }, [supplier]);
  const listId = `skus-${source.key}`;
  const picked = skus.list.find((s) => s.sku_key === source.sku_key.trim());
  return html`<tr data-source=${index}>
    <td class="num">${index + 1}</td>
    <td>
      <input
        name="supplier"
        list="offer-suppliers"
        placeholder="supplier"
        value=${source.supplier}
        onInput=${(e: Event) => onChange({ ...source, supplier: (e.target as HTMLInputElement).value })}
      />
    </td>
    <td>
      <input
        class="code"
        name="sku_key"
        list=${listId}
        placeholder="sku_key"
        value=${source.sku_key}
        onInput=${(e: Event) => onChange({ ...source, sku_key: (e.target as HTMLInputElement).value })}
      />
      <datalist id=${listId}>${skus.list.map((s) => html`<option value=${s.sku_key}>${skuTitle(s)} · ${s.cost_price}</option>`)}</datalist>
      ${picked ? html`<div class="small muted">${skuTitle(picked)}</div>` : null}
      ${skus.error ? html`<div class="small muted" data-field="picker-error">no SKU list for ${supplier}: type its sku_key</div>` : null}
    </td>
    <td class="num"><${Money} amount=${live?.cost_price ?? picked?.cost_price} currency=${live?.currency ?? picked?.currency} /></td>
    <td class="nowrap">${live?.stock_status ? html`<${Badge} value=${live.stock_status} />` : html`<span class="muted">—</span>`}</td>
    <td>
      ${
        live
          ? live.available
            ? html`<${Badge} value="available" tone="good" />`
            : html`<${Badge} value="unavailable" tone="bad" />`
          : html`<span class="muted">unsaved</span>`
      }
    </td>
    <td class="num">
      ${live?.cost_price && salePrice ? html`<${Margin} cost=${live.cost_price} sale=${salePrice} />` : html`<span class="muted">—</span>`}
    </td>
    <td class="nowrap">
      <button class="btn small link" type="button" disabled=${index === 0} onClick=${() => onMove(-1)} aria-label="move up">↑</button>
      <button class="btn small link" type="button" disabled=${index === count - 1} onClick=${() => onMove(1)} aria-label="move down">
        ↓
      </button>
      <button class="btn small link" type="button" disabled=${count === 1} onClick=${onRemove} aria-label="remove source">Remove</button>
    </td>
  </tr>`;
}

export function OfferPage({ code }: { code: string }) {
  const [version, setVersion] = useState(0);
  const loaded = useLoad(async () => {
    try {
      return (await api.get<OfferAnswer>(`/internal/offers/${enc(code)}`)).offer;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'offer_not_found') return null;
      throw e;
    }
  }, [code, version]);
  const suppliers = useLoad(loadSuppliers, []);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => {
    if (loaded.data === undefined) return;
    const data = loaded.data;
    // A sale price the operator just saved stays in the form (the answer does not say whose price it is).
    setDraft((prev) => {
      const typed = prev?.sale_price.trim() ?? '';
      const kept = typed !== '' && data?.sale_price != null && isDecimal(typed) && compareDec(typed, data.sale_price) === 0;
      return { ...draftOf(data), sale_price: kept ? typed : '' };
    });
  }, [loaded.data]);

  const offer = loaded.data ?? null;
  const exists = offer !== null;
  const d = draft;
  const liveOf = (s: DraftSource) => offer?.sources.find((x) => x.supplier === s.supplier.trim() && x.sku_key === s.sku_key.trim());
  const names = [...new Set([...(suppliers.data ?? []), ...(offer?.sources.map((s) => s.supplier) ?? [])])];
  const update = (patch: Partial<Draft>) => d && setDraft({ ...d, ...patch });
  const setSource = (i: number, s: DraftSource) => d && update({ sources: d.sources.map((x, j) => (j === i ? s : x)) });
  const move = (i: number, by: number) => {
    if (!d) return;
    const list = [...d.sources];
    [list[i], list[i + by]] = [list[i + by], list[i]];
    update({ sources: list });
  };
  const salePriceOk = !d || d.sale_price.trim() === '' || (isDecimal(d.sale_price.trim()) && compareDec(d.sale_price.trim(), '0') > 0);
  const save = async (e: Event) => {
    e.preventDefault();
    if (!d) return;
    setSaving(true);
    setSaveError(null);
    setNotice(null);
    try {
      await api.put(`/internal/offers/${enc(code)}`, toBody(d));
      setNotice(exists ? 'Saved.' : 'Created.');
      setVersion((v) => v + 1);
    } catch (err) {
      setSaveError(err);
    } finally {
      setSaving(false);
    }
  };
  const fields = saveError instanceof ApiError ? (saveError.body?.fields as Record<string, string[]> | undefined) : undefined;

  return html`<div class="page offer">
    <p class="back"><a href="#/offers">‹ Offers</a></p>
    <div class="title-row">
      <h1>${exists ? 'Offer' : 'New offer'} <code>${code}</code></h1>
      ${
        offer
          ? offer.available
            ? html`<${Badge} value="available" tone="good" />`
            : html`<${Badge} value="unavailable" tone="bad" />`
          : null
      }
      <span class="spacer"></span>
      ${exists ? html`<button class="btn danger" type="button" onClick=${() => setDeleting(true)}>Delete…</button>` : null}
    </div>
    <${ErrorBox} error=${loaded.error} />
    ${loaded.data === undefined && !loaded.error ? html`<${Loading} what="the offer" />` : null}
    ${
      offer
        ? html`<p data-testid="offer-price">
            Sale price <strong data-field="sale_price"><${Money} amount=${offer.sale_price} currency=${offer.currency} /></strong>
            <span class="muted small"> · updated ${ago(offer.updated_at)}</span>
          </p>`
        : null
    }
    ${
      d
        ? html`<${Card} title="Offer">
            <form onSubmit=${save} data-testid="offer-form">
              <div class="filters">
                <label
                  >Title
                  <input name="title" value=${d.title} onInput=${(e: Event) => update({ title: (e.target as HTMLInputElement).value })}
                /></label>
                <label
                  >Routing
                  <select
                    name="routing"
                    value=${d.routing}
                    onChange=${(e: Event) => update({ routing: (e.target as HTMLSelectElement).value as Draft['routing'] })}
                  >
                    <option value="priority">priority (in this order)</option>
                    <option value="cheapest">cheapest first</option>
                  </select></label
                >
                <label
                  >Sale price
                  <input
                    name="sale_price"
                    class="dec"
                    placeholder="by the pricing rules"
                    value=${d.sale_price}
                    onInput=${(e: Event) => update({ sale_price: (e.target as HTMLInputElement).value })}
                /></label>
                ${salePriceOk ? null : html`<span class="bad small">the sale price must be a decimal above 0</span>`}
                <span class="muted small"
                  >Blank: the pricing rules on the highest cost among the available sources. To keep a fixed price, enter it.</span
                >
              </div>
              <datalist id="offer-suppliers">${names.map((n) => html`<option value=${n}></option>`)}</datalist>
              <div class="table-wrap">
                <table class="table sources" data-testid="offer-sources">
                  <thead>
                    <tr>
                      <th class="num">#</th>
                      <th>Supplier</th>
                      <th>SKU</th>
                      <th class="num">Cost</th>
                      <th>Stock</th>
                      <th>State</th>
                      <th class="num">Margin</th>
                      <th></th>
                    </tr>
                  </thead>
                  <tbody>
                    ${d.sources.map(
                      (s, i) =>
                        html`<${SourceRow}
                          key=${s.key}
                          index=${i}
                          source=${s}
                          live=${liveOf(s)}
                          salePrice=${offer?.sale_price ?? null}
                          count=${d.sources.length}
                          onChange=${(x: DraftSource) => setSource(i, x)}
                          onMove=${(by: number) => move(i, by)}
                          onRemove=${() => update({ sources: d.sources.filter((_, j) => j !== i) })}
                        />`,
                    )}
                  </tbody>
                </table>
              </div>
              ${
                fields
                  ? html`<ul class="bad small" data-testid="offer-fields">
                      ${Object.entries(fields).map(([f, msgs]) => html`<li><code>${f}</code>: ${msgs.join('; ')}</li>`)}
                    </ul>`
                  : null
              }
              <${ErrorBox} error=${saveError} />
              ${notice ? html`<p class="good small" role="status">${notice}</p>` : null}
              <div class="card-actions">
                <button
                  class="btn"
                  type="button"
                  disabled=${d.sources.length >= MAX_SOURCES}
                  onClick=${() => update({ sources: [...d.sources, { key: nextKey++, supplier: '', sku_key: '' }] })}
                >
                  Add source
                </button>
                <button class="btn primary" type="submit" disabled=${saving || !salePriceOk}>
                  ${saving ? 'Saving…' : exists ? 'Save' : 'Create'}
                </button>
              </div>
            </form>
          <//>`
        : null
    }
    ${
      deleting
        ? html`<${Confirm}
            title=${`Delete offer ${code}?`}
            confirmLabel="Delete"
            danger=${true}
            onConfirm=${async () => {
              await api.delete(`/internal/offers/${enc(code)}`);
              navigate('#/offers');
            }}
            onClose=${() => setDeleting(false)}
          />`
        : null
    }
  </div>`;
}

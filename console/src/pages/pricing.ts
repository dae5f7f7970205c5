/**
 * Pricing rules: the defaults (from the environment), and the rules by category and by SKU, edited
 * as one list and saved with `PUT /internal/pricing/rules` (which reprices the catalog). A SKU rule
 * shows the SKU's code and names the SKU by its `sku_key` (a code is unique only within its product);
 * a code typed in names the one listed SKU carrying it (the service refuses one several carry). The
 * preview shows, for the SKUs the draft touches, the price now and the price the draft gives.
 * Rules name their supplier (a rule for every SKU of a supplier, a supplier's category, a supplier's
 * SKU): the page keeps each rule's supplier when it saves (a new category rule is the `UPSTREAM_*`
 * supplier's).
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, enc } from '../api.js';
import { loadCategories, Margin, skuTitle, type FlatCategory } from '../catalog-data.js';
import { html } from '../html.js';
import { compareDec, isDecimal, previewSalePrice } from '../money.js';
import { href } from '../router.js';
import type { Markup, PricingRule, PricingRuleBody, PricingRules, PutPricingRulesAnswer, Sku, SkuAnswer, SkuList } from '../types.js';
import { Card, Confirm, ErrorBox, Loading, Money, useLoad } from '../ui.js';

interface DraftRule {
  key: number;
  scope: 'supplier' | 'category' | 'sku';
  /** The supplier the rule names ('' for none: a new category rule is the `UPSTREAM_*` supplier's, a SKU rule looks at every supplier). */
  supplier: string;
  category_id: string;
  /** What the row shows and the operator types: the SKU's code (or a key). */
  sku_code: string;
  /** The SKU's key, as the service stored the rule or the SKU page named it ('' once the code is edited). */
  sku_key: string;
  markup_percent: string;
  markup_fixed: string;
  rounding: string;
}

let nextKey = 1;

function toDraft(r: PricingRule): DraftRule {
  return {
    key: nextKey++,
    scope: r.scope,
    supplier: r.supplier ?? '',
    category_id: r.category_id != null ? String(r.category_id) : '',
    sku_code: r.sku_code ?? '',
    sku_key: r.sku_key ?? '',
    markup_percent: r.markup_percent,
    markup_fixed: r.markup_fixed,
    rounding: r.rounding ?? '',
  };
}

function toBody(d: DraftRule): PricingRuleBody {
  const markup = {
    markup_percent: d.markup_percent.trim(),
    markup_fixed: d.markup_fixed.trim(),
    rounding: d.rounding.trim() === '' ? null : d.rounding.trim(),
  };
  const supplier = d.supplier ? { supplier: d.supplier } : {};
  if (d.scope === 'supplier') return { scope: 'supplier', supplier: d.supplier, ...markup };
  return d.scope === 'category'
    ? { scope: 'category', ...supplier, category_id: Number(d.category_id), ...markup }
    : { scope: 'sku', ...supplier, sku_code: skuRef(d), ...markup };
}

function problems(d: DraftRule): string[] {
  const out: string[] = [];
  if (d.scope === 'category' && !/^\d+$/.test(d.category_id)) out.push('choose a category');
  if (d.scope === 'sku' && d.sku_code.trim() === '') out.push('give a sku_code');
  if (!isDecimal(d.markup_percent)) out.push('markup % must be a decimal');
  else if (compareDec(d.markup_percent, '-100') < 0) out.push('markup % must not be below -100');
  if (!isDecimal(d.markup_fixed)) out.push('fixed must be a decimal');
  if (d.rounding.trim() !== '' && (!isDecimal(d.rounding) || compareDec(d.rounding, '0') <= 0))
    out.push('rounding must be a decimal above 0');
  return out;
}

/** What a SKU rule names: its SKU's key, or the code typed in. */
const skuRef = (d: DraftRule) => d.sku_key || d.sku_code.trim();
const targetKey = (d: DraftRule) =>
  d.scope === 'supplier' ? `p:${d.supplier}` : d.scope === 'category' ? `c:${d.supplier}/${d.category_id}` : `s:${d.supplier}/${skuRef(d)}`;
/** The row's handle in the page: the category, or the code the row shows. */
const rowKey = (d: DraftRule) =>
  d.scope === 'supplier' ? `p:${d.supplier}` : d.scope === 'category' ? `c:${d.category_id}` : `s:${d.sku_code.trim()}`;
/** Whether a rule's supplier covers the SKU's (a rule without one: any, as far as the preview knows). */
const atSupplier = (r: DraftRule, sku: Sku) => !r.supplier || r.supplier === sku.supplier;
const ruleText = (d: DraftRule) => `${d.markup_percent}|${d.markup_fixed}|${d.rounding}`;

/** The rule the service would pick: the SKU's (by key, or by its code), then the SKU's category, then its parent, then the defaults. */
function ruleFor(sku: Sku, rules: DraftRule[], parents: Map<number, number>, defaults: Markup): { markup: Markup; source: string } {
  const bySku =
    rules.find((r) => r.scope === 'sku' && atSupplier(r, sku) && skuRef(r) === sku.sku_key) ??
    rules.find((r) => r.scope === 'sku' && !r.sku_key && r.sku_code.trim() === sku.sku_code);
  if (bySku) return { markup: bySku, source: 'SKU rule' };
  const cat = Number(sku.category_id);
  const byCat = rules.find((r) => r.scope === 'category' && atSupplier(r, sku) && Number(r.category_id) === cat);
  if (byCat) return { markup: byCat, source: 'category rule' };
  const parent = parents.get(cat);
  const byParent = parent ? rules.find((r) => r.scope === 'category' && atSupplier(r, sku) && Number(r.category_id) === parent) : undefined;
  if (byParent) return { markup: byParent, source: 'parent category rule' };
  const bySupplier = rules.find((r) => r.scope === 'supplier' && r.supplier === sku.supplier);
  if (bySupplier) return { markup: bySupplier, source: 'supplier rule' };
  return { markup: defaults, source: 'defaults' };
}

async function loadTargets(targets: string[]): Promise<Sku[]> {
  const found = new Map<string, Sku>();
  await Promise.all(
    targets.slice(0, 12).map(async (t) => {
      try {
        if (t.startsWith('s:')) {
          const s = (await api.get<SkuAnswer>(`/internal/catalog/skus/${enc(t.slice(2))}`)).sku;
          found.set(s.sku_key, s);
        } else {
          const list = await api.get<SkuList>('/internal/catalog/skus', { category_id: t.slice(2), page_size: 15 });
          for (const s of list.items) found.set(s.sku_key, s);
        }
      } catch (e) {
        // no such SKU, or a code several SKUs carry (the save names them)
        if (!(e instanceof ApiError && (e.status === 404 || e.status === 409))) throw e;
      }
    }),
  );
  return [...found.values()].sort((a, b) => a.sku_code.localeCompare(b.sku_code) || a.sku_key.localeCompare(b.sku_key));
}

function RuleRow({
  rule,
  categories,
  onChange,
  onRemove,
}: {
  rule: DraftRule;
  categories: FlatCategory[];
  onChange: (r: DraftRule) => void;
  onRemove: () => void;
}) {
  const field = (name: keyof DraftRule, placeholder: string, cls = 'dec') =>
    html`<input
      class=${cls}
      name=${name}
      placeholder=${placeholder}
      value=${rule[name]}
      onInput=${(e: Event) =>
        onChange({ ...rule, [name]: (e.target as HTMLInputElement).value, ...(name === 'sku_code' ? { sku_key: '' } : {}) })}
    />`;
  const issues = problems(rule);
  return html`<tr
    data-rule=${rowKey(rule)}
    data-sku-key=${rule.scope === 'sku' ? rule.sku_key : undefined}
    title=${rule.sku_key || undefined}
    class=${issues.length ? 'invalid' : ''}
  >
    <td>
      ${rule.scope === 'supplier' ? 'supplier' : rule.scope === 'category' ? 'category' : 'SKU'}${
        rule.supplier && rule.scope !== 'supplier' ? html` <span class="small">(${rule.supplier})</span>` : null
      }
    </td>
    <td>
      ${
        rule.scope === 'supplier'
          ? rule.supplier
          : rule.scope === 'category'
            ? html`<select
                name="category_id"
                value=${rule.category_id}
                onChange=${(e: Event) => onChange({ ...rule, category_id: (e.target as HTMLSelectElement).value })}
              >
                <option value="">choose…</option>
                ${categories.map((c) => html`<option value=${String(c.id)}>${'\u00a0\u00a0'.repeat(c.depth)}${c.name} (#${c.id})</option>`)}
              </select>`
            : field('sku_code', 'sku_code', 'code')
      }
    </td>
    <td>${field('markup_percent', '0')}</td>
    <td>${field('markup_fixed', '0')}</td>
    <td>${field('rounding', 'default')}</td>
    <td>${issues.length ? html`<span class="bad small">${issues.join('; ')}</span>` : null}</td>
    <td><button class="btn small link" type="button" onClick=${onRemove} aria-label="remove rule">Remove</button></td>
  </tr>`;
}

export function PricingPage({ query }: { query: URLSearchParams }) {
  const saved = useLoad(() => api.get<PricingRules>('/internal/pricing/rules'), []);
  const categories = useLoad(loadCategories, []);
  const [draft, setDraft] = useState<DraftRule[] | null>(null);
  const [savedRules, setSavedRules] = useState<DraftRule[]>([]);
  const [preview, setPreview] = useState<{ skus: Sku[]; error: unknown; loading: boolean }>({ skus: [], error: null, loading: false });
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const focusSku = query.get('sku_code');
  const focusKey = query.get('sku_key') ?? '';

  useEffect(() => {
    if (!saved.data) return;
    const rules = saved.data.rules.map(toDraft);
    setSavedRules(rules);
    const next = rules.map((r) => ({ ...r }));
    if (focusSku && !next.some((r) => r.scope === 'sku' && (focusKey ? r.sku_key === focusKey : r.sku_code === focusSku))) {
      next.push({
        key: nextKey++,
        scope: 'sku',
        supplier: query.get('supplier') ?? '',
        category_id: '',
        sku_code: focusSku,
        sku_key: focusKey,
        markup_percent: saved.data.defaults.markup_percent,
        markup_fixed: saved.data.defaults.markup_fixed,
        rounding: '',
      });
    }
    setDraft(next);
  }, [saved.data]);

  const defaults = saved.data?.defaults;
  const parents = useMemo(() => new Map((categories.data ?? []).map((c) => [c.id, c.parentId])), [categories.data]);
  const rules = draft ?? [];

  // What the draft changes: added, edited and removed rules (and the SKU the page was opened for).
  const savedByTarget = new Map(savedRules.map((r) => [targetKey(r), r]));
  const draftByTarget = new Map(rules.map((r) => [targetKey(r), r]));
  const changedTargets = [
    ...rules
      .filter(
        (r) => !problems(r).length && ruleText(r) !== (savedByTarget.get(targetKey(r)) ? ruleText(savedByTarget.get(targetKey(r))!) : ''),
      )
      .map(targetKey),
    ...savedRules.filter((r) => !draftByTarget.has(targetKey(r))).map(targetKey),
    ...(focusSku ? [`s:${focusSku}`] : []),
  ];
  const targetsText = [...new Set(changedTargets)].sort().join(',');
  const norm = (rs: DraftRule[]) =>
    rs
      .map((r) => `${targetKey(r)}=${ruleText(r)}`)
      .sort()
      .join('\n');
  const dirty = draft !== null && norm(rules) !== norm(savedRules);
  const invalid = rules.some((r) => problems(r).length > 0);
  const duplicate = draftByTarget.size !== rules.length;

  useEffect(() => {
    if (!targetsText) {
      setPreview({ skus: [], error: null, loading: false });
      return;
    }
    let live = true;
    setPreview((p) => ({ ...p, loading: true }));
    const t = setTimeout(() => {
      loadTargets(targetsText.split(','))
        .then((skus) => live && setPreview({ skus, error: null, loading: false }))
        .catch((error: unknown) => live && setPreview({ skus: [], error, loading: false }));
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [targetsText, version]);

  if (saved.error && !saved.data)
    return html`<div class="page">
      <h1>Pricing rules</h1>
      <${ErrorBox} error=${saved.error} />
    </div>`;
  if (!saved.data || !defaults || draft === null)
    return html`<div class="page">
      <h1>Pricing rules</h1>
      <${Loading} />
    </div>`;

  const update = (key: number, next: DraftRule) => setDraft(rules.map((r) => (r.key === key ? next : r)));
  const add = (scope: 'category' | 'sku') =>
    setDraft([
      ...rules,
      {
        key: nextKey++,
        scope,
        supplier: '',
        category_id: '',
        sku_code: '',
        sku_key: '',
        markup_percent: defaults.markup_percent,
        markup_fixed: defaults.markup_fixed,
        rounding: '',
      },
    ]);
  const validRules = rules.filter((r) => problems(r).length === 0);

  return html`<div class="page pricing">
    <h1>Pricing rules</h1>
    <p class="muted">
      Sale price = cost × (1 + markup %/100) + fixed, never below cost, rounded up to the step. A SKU rule beats its category's rule, which
      beats the parent category's, which beats the defaults.
    </p>
    ${notice ? html`<div class="alert ok" role="status">${notice}</div>` : null}
    <${Card} title="Defaults">
      <p data-testid="pricing-defaults">
        markup <strong>${defaults.markup_percent} %</strong> + <strong>${defaults.markup_fixed}</strong>, rounded up to
        <strong>${defaults.rounding}</strong>
        <span class="muted small"> — set by PRICE_MARKUP_PERCENT, PRICE_MARKUP_FIXED and PRICE_ROUNDING at start.</span>
      </p>
    <//>
    <${Card}
      title="Rules"
      actions=${html`<button class="btn small" type="button" onClick=${() => add('category')}>+ Category rule</button>
        <button class="btn small" type="button" onClick=${() => add('sku')}>+ SKU rule</button>`}
    >
      <table class="table rules" data-testid="rules-table">
        <thead>
          <tr>
            <th>Scope</th>
            <th>Applies to</th>
            <th>Markup %</th>
            <th>Fixed</th>
            <th>Rounding step</th>
            <th></th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${
            rules.length === 0
              ? html`<tr>
                  <td colspan="7" class="muted">No rules: every SKU is priced by the defaults.</td>
                </tr>`
              : null
          }
          ${rules.map(
            (r) =>
              html`<${RuleRow}
                key=${r.key}
                rule=${r}
                categories=${categories.data ?? []}
                onChange=${(n: DraftRule) => update(r.key, n)}
                onRemove=${() => setDraft(rules.filter((x) => x.key !== r.key))}
              />`,
          )}
        </tbody>
      </table>
      ${duplicate ? html`<p class="alert">Two rules apply to the same category or SKU: keep one.</p>` : null}
      <div class="row end">
        <button class="btn" type="button" disabled=${!dirty} onClick=${() => setDraft(savedRules.map((r) => ({ ...r })))}>
          Discard changes
        </button>
        <button class="btn primary" type="button" disabled=${!dirty || invalid || duplicate} onClick=${() => setConfirming(true)}>
          Save rules…
        </button>
      </div>
    <//>
    <${Card} title="Preview" class="preview">
      ${!targetsText ? html`<p class="muted">Edit a rule to see the prices it gives.</p>` : null}
      <${ErrorBox} error=${preview.error} />
      ${preview.loading && preview.skus.length === 0 ? html`<${Loading} what="the SKUs" />` : null}
      ${
        preview.skus.length
          ? html`<table class="table" data-testid="pricing-preview">
              <thead>
                <tr>
                  <th>SKU</th>
                  <th>Product</th>
                  <th>Rule</th>
                  <th class="num">Cost</th>
                  <th class="num">Price now</th>
                  <th class="num">Price with the draft</th>
                  <th class="num">Margin</th>
                </tr>
              </thead>
              <tbody>
                ${preview.skus.map((s) => {
                  const { markup, source } = ruleFor(s, validRules, parents, defaults);
                  const next = previewSalePrice(s.cost_price, markup, defaults.rounding);
                  const moved = next !== null && compareDec(next, s.sale_price) !== 0;
                  return html`<tr data-sku=${s.sku_code} data-sku-key=${s.sku_key} class=${moved ? 'moved' : ''}>
                    <td>
                      <a href=${href(`/catalog/${encodeURIComponent(s.sku_key)}`)} title=${s.sku_key}><code>${s.sku_code}</code></a>
                    </td>
                    <td class="title" title=${skuTitle(s)}>${skuTitle(s)}</td>
                    <td>${source}</td>
                    <td class="num"><${Money} amount=${s.cost_price} /></td>
                    <td class="num"><${Money} amount=${s.sale_price} currency=${s.currency} /></td>
                    <td class="num" data-field="preview_price">
                      <strong><${Money} amount=${next} currency=${s.currency} /></strong>${
                        moved
                          ? html` <span class=${compareDec(next!, s.sale_price) > 0 ? 'up' : 'down'}
                              >${compareDec(next!, s.sale_price) > 0 ? '▲' : '▼'}</span
                            >`
                          : null
                      }
                    </td>
                    <td class="num">${next ? html`<${Margin} cost=${s.cost_price} sale=${next} />` : null}</td>
                  </tr>`;
                })}
              </tbody>
            </table>`
          : null
      }
    <//>
    ${
      confirming
        ? html`<${Confirm}
            title="Save the pricing rules?"
            confirmLabel="Save and reprice"
            onClose=${() => setConfirming(false)}
            onConfirm=${async () => {
              const body = await api.put<PutPricingRulesAnswer>('/internal/pricing/rules', { rules: rules.map(toBody) });
              saved.set(body);
              setVersion((v) => v + 1);
              setNotice(`Rules saved; ${body.repriced ?? 0} sale price${body.repriced === 1 ? '' : 's'} changed.`);
            }}
          >
            <p>
              The ${rules.length} rule${rules.length === 1 ? '' : 's'} replace the saved ones, and the whole catalog is repriced at once.
            </p>
          <//>`
        : null
    }
  </div>`;
}

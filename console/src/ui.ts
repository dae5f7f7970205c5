/** Small shared pieces: loading hooks, badges, money, times, errors, a confirmation dialog, a pager, a list's table. */
import { Fragment, type ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { html } from './html.js';

// ------------------------------------------------------------------------------------------- hooks

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
  set: (data: T) => void;
}

/** Runs `load` when `deps` change; keeps the last data while reloading; ignores stale answers. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    setLoading(true);
    try {
      const value = await loadRef.current();
      if (mine === seq.current) {
        setData(value);
        setError(null);
      }
    } catch (e) {
      if (mine === seq.current) setError(e);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, []);
  useEffect(() => {
    void reload();
  }, deps);
  useEffect(() => () => void (seq.current = -1), []);
  return { data, error, loading, reload, set: setData };
}

/** Calls `fn` every `ms` (null: paused). */
export function useInterval(fn: () => void, ms: number | null): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (ms === null) return;
    const t = setInterval(() => ref.current(), ms);
    return () => clearInterval(t);
  }, [ms]);
}

// ------------------------------------------------------------------------------------- formatting

const pad = (n: number) => String(n).padStart(2, '0');

/** Local time as `2026-11-22 14:03:09`. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${date} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

export function durationMs(start: string | null | undefined, end: string | null | undefined): number | null {
  if (!start || !end) return null;
  const d = Date.parse(end) - Date.parse(start);
  return Number.isFinite(d) ? d : null;
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return '';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (!Number.isFinite(s)) return '';
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** A multi-language text in the browser's language, else English, else the first one. */
export function pickText(text: Record<string, string> | null | undefined): string {
  if (!text) return '';
  const langs = [...(navigator.languages ?? []), navigator.language, 'en', 'en-US', 'zh-CN'];
  for (const l of langs) if (l && text[l]) return text[l];
  return Object.values(text)[0] ?? '';
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.text;
  return e instanceof Error ? e.message : String(e);
}

// ------------------------------------------------------------------------------------- components

const STATUS_TONE: Record<string, string> = {
  queued: 'warn',
  submitting: 'info',
  submit_unknown: 'warn',
  rejected: 'bad',
  pending_payment: 'info',
  paid: 'info',
  fulfilling: 'info',
  partially_delivered: 'warn',
  delivered: 'good',
  completed: 'good',
  canceled: 'muted',
  partially_refunded: 'muted',
  refunded: 'muted',
  running: 'info',
  succeeded: 'good',
  failed: 'bad',
  rate_limited: 'bad',
  auth_failed: 'bad',
  down: 'bad',
  up: 'good',
  unknown: 'muted',
  enabled: 'good',
  disabled: 'muted',
  refundable: 'warn',
  not_refundable: 'muted',
  in_stock: 'good',
  unlimited: 'good',
  low_stock: 'warn',
  out_of_stock: 'bad',
};

export function Badge({ value, tone }: { value: string; tone?: string }) {
  return html`<span class=${`badge ${tone ?? STATUS_TONE[value] ?? 'muted'}`} data-value=${value}>${value.replace(/_/g, ' ')}</span>`;
}

export function Money({ amount, currency }: { amount: string | null | undefined; currency?: string | null }) {
  if (amount === null || amount === undefined) return html`<span class="muted">—</span>`;
  return html`<span class="money">${amount}${currency ? html` <small>${currency}</small>` : null}</span>`;
}

export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return html`<span class="muted">—</span>`;
  return html`<time datetime=${at} title=${at}>${formatTime(at)}</time>`;
}

export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.code : null;
  const message = error instanceof ApiError ? error.message : errorText(error);
  return html`<div class="alert" role="alert" data-error-code=${code ?? ''}>
    ${title ? html`<strong>${title} </strong>` : null}${code ? html`<code>${code}</code> ` : null}${message}
  </div>`;
}

export function Loading({ what }: { what?: string }) {
  return html`<p class="loading" aria-busy="true">Loading${what ? ` ${what}` : ''}…</p>`;
}

export function Card({
  title,
  children,
  class: cls,
  actions,
}: {
  title?: string;
  children: ComponentChildren;
  class?: string;
  actions?: ComponentChildren;
}) {
  return html`<section class=${`card ${cls ?? ''}`}>
    ${
      title || actions
        ? html`<header class="card-head">
            ${title ? html`<h2>${title}</h2>` : null}${actions ? html`<div class="card-actions">${actions}</div>` : null}
          </header>`
        : null
    }
    ${children}
  </section>`;
}

export interface ConfirmProps {
  title: string;
  confirmLabel: string;
  danger?: boolean;
  children?: ComponentChildren;
  /** Whether the confirm button is enabled (e.g. a required field is filled). */
  canConfirm?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}

/** A modal confirmation: the action runs on confirm; its error is shown in the dialog as it came. */
export function Confirm(props: ConfirmProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  const confirm = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return html`<dialog
    ref=${ref}
    class="confirm"
    aria-label=${props.title}
    onCancel=${(e: Event) => {
      e.preventDefault();
      if (!busy) props.onClose();
    }}
  >
    <form method="dialog" onSubmit=${confirm}>
      <h2>${props.title}</h2>
      <div class="confirm-body">${props.children}</div>
      <${ErrorBox} error=${error} />
      <div class="confirm-actions">
        <button type="button" class="btn" onClick=${props.onClose} disabled=${busy}>Back</button>
        <button type="submit" class=${`btn ${props.danger ? 'danger' : 'primary'}`} disabled=${busy || props.canConfirm === false}>
          ${busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </form>
  </dialog>`;
}

export function Pager({ page, pageSize, total, onPage }: { page: number; pageSize: number; total: number; onPage: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const from = total === 0 ? 0 : (page - 1) * pageSize + 1;
  const to = Math.min(total, page * pageSize);
  return html`<nav class="pager" aria-label="pages">
    <span>${from}–${to} of ${total}</span>
    <button class="btn small" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>‹ Previous</button>
    <span>page ${page} / ${pages}</span>
    <button class="btn small" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next ›</button>
  </nav>`;
}

/** A column of a list's table: its heading, or its heading and the class of its `<th>` (e.g. `num`). */
export type Column = string | [label: string, cls: string];

export interface ListTableProps<T> {
  /** The table's `data-testid`. */
  testid: string;
  /** What the loading line says is loading. */
  what: string;
  columns: Column[];
  /** The rows' items; undefined until they are read (the table shows once they are). */
  items: T[] | undefined;
  error: unknown;
  /** Whether the loading line shows; by default while there are neither items nor an error. */
  loading?: boolean;
  row: (item: T) => ComponentChildren;
  /** The text of the one row an empty list shows; none: an empty body. */
  empty?: ComponentChildren;
  /** Where the items are in the whole list: with `onPage`, a pager under the table. */
  paging?: { page: number; page_size: number; total: number };
  onPage?: (page: number) => void;
  /** false: the table without its scrolling wrapper. */
  wrap?: boolean;
  /** Shown between the loading line and the table. */
  children?: ComponentChildren;
}

/** A list's body in its card: the error as it came, the loading line, the table of the items, the pager. */
export function ListTable<T>(props: ListTableProps<T>) {
  const { items, paging, onPage } = props;
  const loading = props.loading ?? (!items && !props.error);
  const table = items
    ? html`<table class="table" data-testid=${props.testid}>
        <thead>
          <tr>
            ${props.columns.map((c) => (typeof c === 'string' ? html`<th>${c}</th>` : html`<th class=${c[1]}>${c[0]}</th>`))}
          </tr>
        </thead>
        <tbody>
          ${
            items.length === 0 && props.empty !== undefined
              ? html`<tr>
                  <td colspan=${props.columns.length} class="muted">${props.empty}</td>
                </tr>`
              : null
          }
          ${items.map((item) => props.row(item))}
        </tbody>
      </table>`
    : null;
  return html`<${Fragment}>
    <${ErrorBox} error=${props.error} />
    ${loading ? html`<${Loading} what=${props.what} />` : null}${props.children}
    ${table && props.wrap !== false ? html`<div class="table-wrap">${table}</div>` : table}
    ${
      items && paging && onPage
        ? html`<${Pager} page=${paging.page} pageSize=${paging.page_size} total=${paging.total} onPage=${onPage} />`
        : null
    }
  <//>`;
}

/** A definition list from [label, value] pairs; a `testid` for each value helps the tests. */
export function Facts({ rows }: { rows: Array<[string, ComponentChildren, string?]> }) {
  return html`<dl class="facts">
    ${rows.map(
      ([label, value, id]) =>
        html`<div>
          <dt>${label}</dt>
          <dd data-field=${id ?? null}>${value ?? html`<span class="muted">—</span>`}</dd>
        </div>`,
    )}
  </dl>`;
}

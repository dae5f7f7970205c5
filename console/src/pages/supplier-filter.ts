/** The supplier filter of the lists (`?supplier=`): the names from `GET /health`, shown once there are several. */
import { api } from '../api.js';
import { html } from '../html.js';
import type { Health } from '../types.js';
import { useLoad } from '../ui.js';

/** The suppliers' names as `/health` lists them (the `UPSTREAM_*` one first); empty until read. */
export function useSupplierNames(): string[] {
  const health = useLoad(() => api.get<Health>('/health'), []);
  return Object.keys(health.data?.suppliers ?? {});
}

export function SupplierFilter({ names, value, onChange }: { names: string[]; value: string; onChange: (v: string) => void }) {
  if (names.length < 2 && !value) return null;
  return html`<label
    >Supplier
    <select name="supplier" value=${value} onChange=${(e: Event) => onChange((e.target as HTMLSelectElement).value)}>
      <option value="">all</option>
      ${[...new Set([...names, ...(value ? [value] : [])])].map((n) => html`<option value=${n}>${n}</option>`)}
    </select></label
  >`;
}

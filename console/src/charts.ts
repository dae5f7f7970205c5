/** Inline SVG charts: no chart library, a few hundred bytes of markup each. */
import { html } from './html.js';

export interface Bar {
  label: string;
  value: number;
  /** CSS class of the bar: good, bad, info, warn. */
  tone?: string;
  /** Tooltip text. */
  title?: string;
}

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function BarChart({
  bars,
  format = String,
  label,
  height = 180,
}: {
  bars: Bar[];
  format?: (v: number) => string;
  label: string;
  height?: number;
}) {
  const W = 640;
  const left = 48;
  const bottom = 22;
  const top = 10;
  const plotH = height - top - bottom;
  const plotW = W - left - 8;
  const max = niceMax(Math.max(0, ...bars.map((b) => b.value)));
  const slot = bars.length ? plotW / bars.length : plotW;
  const barW = Math.max(2, Math.min(40, slot * 0.7));
  const every = Math.max(1, Math.ceil(bars.length / 10));
  const ticks = [0, max / 2, max];
  if (bars.length === 0) return html`<p class="muted chart-empty">Nothing to chart yet.</p>`;
  return html`<svg class="chart" viewBox=${`0 0 ${W} ${height}`} role="img" aria-label=${label}>
    ${ticks.map((t) => {
      const y = top + plotH - (t / max) * plotH;
      return html`<g class="grid"
        ><line x1=${left} x2=${W - 4} y1=${y} y2=${y} /><text x=${left - 6} y=${y + 4} text-anchor="end">${format(t)}</text></g
      >`;
    })}
    ${bars.map((b, i) => {
      const h = max ? (b.value / max) * plotH : 0;
      const x = left + i * slot + (slot - barW) / 2;
      return html`<g class=${`bar ${b.tone ?? ''}`}>
        <rect x=${x} y=${top + plotH - h} width=${barW} height=${Math.max(h, b.value > 0 ? 1 : 0)} rx="2"
          ><title>${b.title ?? `${b.label}: ${format(b.value)}`}</title></rect
        >
        ${
          (bars.length - 1 - i) % every === 0
            ? html`<text class="x" x=${x + barW / 2} y=${height - 6} text-anchor="middle">${b.label}</text>`
            : null
        }
      </g>`;
    })}
  </svg>`;
}

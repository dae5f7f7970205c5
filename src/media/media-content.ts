/**
 * The references of a product's `content` (HTML), found and rewritten with a real HTML parser (parse5,
 * with source locations): only the attributes that name something are spliced, so everything else in
 * the content stays byte for byte as the upstream sent it. Pure.
 *
 * - Image references go through `image` (the relay's URL of a mirrored file, or null to leave it out):
 *   `<img src>` (an image left out loses its whole tag), `srcset` candidates (`<img>`, `<source>`),
 *   `<video poster>`, `<input type=image src>`, a `background` attribute and every `url(…)` of an inline
 *   `style`. A `srcset` or `style` is rewritten when every reference in it is shown, else the attribute
 *   is removed; `poster`, `background` and `src` likewise.
 * - Every other reference (`href`, `src` of media and frames, `action`, `formaction`, `data`, `cite`,
 *   `longdesc`, `xlink:href`, …) that names the supplier (`supplier`: relative URLs resolve against its
 *   origin) has its attribute removed; the element and its text stay. A fragment (`#top`) stays.
 * - Any other attribute whose value is an absolute (or protocol-relative) URL naming the supplier is
 *   removed too (e.g. `data-src`, `data-zoom`).
 */
import { parseFragment } from 'parse5';

/** One `<img>` of the content: its `src` value (decoded) and where its tag and attribute sit. */
export interface ContentImage {
  src: string;
  /** The whole start tag. */
  tag: { start: number; end: number };
  /** The `src="…"` attribute. */
  attr: { start: number; end: number };
}

interface Span {
  start: number;
  end: number;
}

interface Located {
  nodeName: string;
  attrs?: Array<{ name: string; value: string; prefix?: string }>;
  childNodes?: Located[];
  content?: Located;
  sourceCodeLocation?: {
    startOffset: number;
    endOffset: number;
    startTag?: { startOffset: number; endOffset: number; attrs?: Record<string, { startOffset: number; endOffset: number }> };
    attrs?: Record<string, { startOffset: number; endOffset: number }>;
  } | null;
}

/** An element with its attributes' decoded values and their locations (by the name as written, lowercased). */
interface ElementAttrs {
  name: string;
  tag: Span;
  values: Map<string, string>;
  spans: Map<string, Span>;
}

function walkElements(html: string, visit: (e: ElementAttrs) => void): void {
  const root = parseFragment(html, { sourceCodeLocationInfo: true }) as unknown as Located;
  const walk = (node: Located): void => {
    const loc = node.sourceCodeLocation;
    if (node.attrs && loc) {
      const tag = loc.startTag ?? loc;
      const spans = new Map<string, Span>();
      for (const [k, v] of Object.entries(tag.attrs ?? loc.attrs ?? {})) spans.set(k, { start: v.startOffset, end: v.endOffset });
      const values = new Map<string, string>();
      for (const a of node.attrs) values.set(a.prefix ? `${a.prefix}:${a.name}` : a.name, a.value);
      visit({ name: node.nodeName, tag: { start: tag.startOffset, end: tag.endOffset }, values, spans });
    }
    for (const child of node.childNodes ?? []) walk(child);
    if (node.content) walk(node.content);
  };
  walk(root);
}

/** Every `<img src>` of an HTML fragment, in document order (templates included). */
export function contentImages(html: string): ContentImage[] {
  const out: ContentImage[] = [];
  walkElements(html, (e) => {
    const src = e.values.get('src');
    const at = e.spans.get('src');
    if (e.name === 'img' && src !== undefined && at) out.push({ src, tag: e.tag, attr: at });
  });
  return out;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
}

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f';

/** The candidates of a `srcset` (HTML's parsing: a URL, then its descriptors up to a comma). */
export function srcsetCandidates(value: string): Array<{ url: string; descriptors: string }> {
  const out: Array<{ url: string; descriptors: string }> = [];
  let i = 0;
  while (i < value.length) {
    while (i < value.length && (isSpace(value[i]) || value[i] === ',')) i++;
    if (i >= value.length) break;
    let j = i;
    while (j < value.length && !isSpace(value[j])) j++;
    let url = value.slice(i, j);
    let descriptors = '';
    if (url.endsWith(',')) {
      url = url.replace(/,+$/, '');
    } else {
      let k = j;
      let paren = false;
      while (k < value.length && (paren || value[k] !== ',')) {
        if (value[k] === '(') paren = true;
        else if (value[k] === ')') paren = false;
        k++;
      }
      descriptors = value.slice(j, k).trim();
      j = k;
    }
    if (url !== '') out.push({ url, descriptors });
    i = j;
  }
  return out;
}

/** The `url(…)` references of CSS declarations (strings and comments skipped), with where each sits. */
export function cssUrls(css: string): Array<{ url: string; start: number; end: number }> {
  const out: Array<{ url: string; start: number; end: number }> = [];
  let i = 0;
  const readString = (at: number): { text: string; end: number } => {
    const q = css[at];
    let text = '';
    let k = at + 1;
    while (k < css.length && css[k] !== q) {
      if (css[k] === '\\' && k + 1 < css.length) {
        text += css[k + 1];
        k += 2;
        continue;
      }
      text += css[k++];
    }
    return { text, end: Math.min(k + 1, css.length) };
  };
  while (i < css.length) {
    const c = css[i];
    if (c === '/' && css[i + 1] === '*') {
      const close = css.indexOf('*/', i + 2);
      i = close < 0 ? css.length : close + 2;
    } else if (c === '"' || c === "'") {
      i = readString(i).end;
    } else if (css.slice(i, i + 4).toLowerCase() === 'url(' && !/[\w-]/.test(css[i - 1] ?? '')) {
      let k = i + 4;
      while (isSpace(css[k])) k++;
      let url: string;
      if (css[k] === '"' || css[k] === "'") {
        const s = readString(k);
        url = s.text;
        k = s.end;
        while (k < css.length && css[k] !== ')') k++;
      } else {
        const from = k;
        while (k < css.length && css[k] !== ')') k++;
        url = css.slice(from, k).trim();
      }
      const end = Math.min(k + 1, css.length);
      out.push({ url, start: i, end });
      i = end;
    } else {
      i++;
    }
  }
  return out;
}

/** How the references of a content are shown. */
export interface ContentRewrite {
  /** An image reference: the relay's URL to name instead, or null to leave it out. */
  image: (src: string) => string | null;
  /** Whether a reference names the supplier (a relative one does: it resolves against its origin). */
  supplier: (ref: string) => boolean;
}

/** Attributes that hold a reference other than an image, on any element. */
const LINK_ATTRS = new Set([
  'href',
  'xlink:href',
  'action',
  'formaction',
  'data',
  'cite',
  'longdesc',
  'manifest',
  'codebase',
  'archive',
  'lowsrc',
  'dynsrc',
  'profile',
  'usemap',
  'ping',
  'itemtype',
  'src',
]);

function looksAbsolute(value: string): boolean {
  const v = value.trim().toLowerCase();
  return v.startsWith('http:') || v.startsWith('https:') || v.startsWith('//');
}

/**
 * The content with its references rewritten as the top of this file says. Content with nothing to
 * change is returned as it is.
 */
export function rewriteContent(html: string, how: ContentRewrite): string {
  const edits: Array<Span & { text: string }> = [];
  const replaceAttr = (name: string, span: Span, value: string): void => {
    edits.push({ start: span.start, end: span.end, text: `${name}="${escapeAttribute(value)}"` });
  };
  const removeAttr = (span: Span): void => {
    edits.push({ start: span.start, end: span.end, text: '' });
  };
  const linkRef = (value: string): boolean => {
    const v = value.trim();
    return !v.startsWith('#') && how.supplier(v);
  };
  walkElements(html, (e) => {
    const isImg = e.name === 'img';
    const imageSrc = isImg || (e.name === 'input' && (e.values.get('type') ?? '').trim().toLowerCase() === 'image');
    for (const [name, span] of e.spans) {
      const value = e.values.get(name) ?? '';
      if (name === 'src' && isImg) {
        const next = how.image(value);
        if (next === null) edits.push({ start: e.tag.start, end: e.tag.end, text: '' });
        else replaceAttr(name, span, next);
      } else if ((name === 'src' && imageSrc) || (name === 'poster' && e.name === 'video') || name === 'background') {
        const next = how.image(value);
        if (next === null) removeAttr(span);
        else replaceAttr(name, span, next);
      } else if (name === 'srcset' || name === 'imagesrcset') {
        const candidates = srcsetCandidates(value);
        const shown = candidates.map((c) => how.image(c.url));
        if (shown.some((u) => u === null) || candidates.length === 0) removeAttr(span);
        else replaceAttr(name, span, candidates.map((c, k) => (c.descriptors ? `${shown[k]} ${c.descriptors}` : shown[k])).join(', '));
      } else if (name === 'style') {
        const refs = cssUrls(value);
        if (refs.length === 0) continue;
        const shown = refs.map((r) => how.image(r.url));
        if (shown.some((u) => u === null)) {
          removeAttr(span);
          continue;
        }
        let css = '';
        let at = 0;
        refs.forEach((r, k) => {
          css += `${value.slice(at, r.start)}url("${shown[k]!.replace(/["\\]/g, (ch) => `\\${ch}`)}")`;
          at = r.end;
        });
        replaceAttr(name, span, css + value.slice(at));
      } else if (LINK_ATTRS.has(name)) {
        if (linkRef(value)) removeAttr(span);
      } else if (looksAbsolute(value) && how.supplier(value.trim())) {
        removeAttr(span);
      }
    }
  });
  if (edits.length === 0) return html;
  // a removed <img> tag starts before the edits of its attributes, which are then skipped
  edits.sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let at = 0;
  for (const ed of edits) {
    if (ed.start < at) continue;
    out += html.slice(at, ed.start) + ed.text;
    at = ed.end;
  }
  return out + html.slice(at);
}

/**
 * The content with each `<img>`'s `src` replaced by `replace(src)`, or its tag removed when `replace`
 * answers null; other references are left as they are (nothing names the supplier).
 */
export function rewriteContentImages(html: string, replace: (src: string) => string | null): string {
  return rewriteContent(html, { image: replace, supplier: () => false });
}

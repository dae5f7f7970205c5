/**
 * A product's `content` (HTML from the supplier, relayed) made safe to show in the console: parsed by
 * the browser's own HTML parser into an inert document, then rebuilt from an allowlist of elements
 * and attributes. Scripts, styles, event handlers, forms, frames and every other element are dropped
 * (the text of an unknown element is kept); links and images keep only http(s) or relative URLs.
 */
const ALLOWED: Record<string, readonly string[]> = {
  p: [],
  br: [],
  hr: [],
  b: [],
  strong: [],
  i: [],
  em: [],
  u: [],
  s: [],
  small: [],
  sub: [],
  sup: [],
  code: [],
  pre: [],
  blockquote: [],
  span: [],
  div: [],
  ul: [],
  ol: [],
  li: [],
  dl: [],
  dt: [],
  dd: [],
  h1: [],
  h2: [],
  h3: [],
  h4: [],
  h5: [],
  h6: [],
  table: [],
  thead: [],
  tbody: [],
  tr: [],
  th: ['colspan', 'rowspan'],
  td: ['colspan', 'rowspan'],
  a: ['href', 'title'],
  img: ['src', 'alt', 'title', 'width', 'height'],
};
/** Dropped with everything inside them. */
const DROPPED = new Set([
  'script',
  'style',
  'template',
  'iframe',
  'object',
  'embed',
  'noscript',
  'svg',
  'math',
  'form',
  'textarea',
  'select',
  'button',
  'input',
  'link',
  'meta',
]);

function safeUrl(value: string): boolean {
  const v = value.trim();
  if (v.startsWith('/') && !v.startsWith('//')) return true;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function copy(from: Node, to: Node, doc: Document): void {
  for (const child of Array.from(from.childNodes)) {
    if (child.nodeType === Node.TEXT_NODE) {
      to.appendChild(doc.createTextNode(child.textContent ?? ''));
      continue;
    }
    if (child.nodeType !== Node.ELEMENT_NODE) continue;
    const el = child as Element;
    const name = el.tagName.toLowerCase();
    if (DROPPED.has(name)) continue;
    const allowed = ALLOWED[name];
    if (!allowed) {
      copy(el, to, doc); // unknown element: its content only
      continue;
    }
    const out = doc.createElement(name);
    for (const attr of allowed) {
      const v = el.getAttribute(attr);
      if (v === null) continue;
      if ((attr === 'href' || attr === 'src') && !safeUrl(v)) continue;
      out.setAttribute(attr, v);
    }
    if (name === 'a') {
      out.setAttribute('rel', 'noopener noreferrer nofollow');
      out.setAttribute('target', '_blank');
    }
    if (name === 'img') out.setAttribute('loading', 'lazy');
    copy(el, out, doc);
    to.appendChild(out);
  }
}

/** The sanitized HTML of `html`. */
export function sanitizeHtml(html: string): string {
  const source = new DOMParser().parseFromString(html, 'text/html');
  const doc = document.implementation.createHTMLDocument('');
  const root = doc.createElement('div');
  copy(source.body, root, doc);
  return root.innerHTML;
}

/**
 * The images of a product's `content` (HTML), found and rewritten with a real HTML parser (parse5,
 * with source locations): only the `src` values of `<img>` elements are spliced, so everything else
 * in the content stays byte for byte as the upstream sent it. Pure.
 *
 * An image left out (refused, or not fetched yet) loses its whole `<img>` tag; a `srcset` on an
 * `<img>` is dropped (its candidates would name the supplier's host, and the relay mirrors `src` only).
 */
import { parseFragment } from 'parse5';

/** One `<img>` of the content: its `src` value (decoded) and where its tag and attributes sit. */
export interface ContentImage {
  src: string;
  /** The whole start tag. */
  tag: { start: number; end: number };
  /** The `src="…"` attribute. */
  attr: { start: number; end: number };
  /** `srcset="…"` attributes of the tag (dropped when the image is kept). */
  srcset: Array<{ start: number; end: number }>;
}

interface Located {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Located[];
  content?: Located;
  sourceCodeLocation?: {
    startOffset: number;
    endOffset: number;
    startTag?: { startOffset: number; endOffset: number; attrs?: Record<string, { startOffset: number; endOffset: number }> };
    attrs?: Record<string, { startOffset: number; endOffset: number }>;
  } | null;
}

/** Every `<img src>` of an HTML fragment, in document order (templates included). */
export function contentImages(html: string): ContentImage[] {
  const out: ContentImage[] = [];
  const root = parseFragment(html, { sourceCodeLocationInfo: true }) as unknown as Located;
  const walk = (node: Located): void => {
    if (node.nodeName === 'img' && node.sourceCodeLocation) {
      const loc = node.sourceCodeLocation;
      const tag = loc.startTag ?? loc;
      const attrs = tag.attrs ?? loc.attrs ?? {};
      const src = node.attrs?.find((a) => a.name === 'src');
      const at = attrs.src;
      if (src && at) {
        out.push({
          src: src.value,
          tag: { start: tag.startOffset, end: tag.endOffset },
          attr: { start: at.startOffset, end: at.endOffset },
          srcset: attrs.srcset ? [{ start: attrs.srcset.startOffset, end: attrs.srcset.endOffset }] : [],
        });
      }
    }
    for (const child of node.childNodes ?? []) walk(child);
    if (node.content) walk(node.content);
  };
  walk(root);
  return out;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
}

/**
 * The content with each image's `src` replaced by `replace(src)` (a URL), or its tag removed when
 * `replace` answers null. Everything outside the spliced ranges is kept as it is.
 */
export function rewriteContentImages(html: string, replace: (src: string) => string | null): string {
  const images = contentImages(html);
  if (images.length === 0) return html;
  const edits: Array<{ start: number; end: number; text: string }> = [];
  for (const img of images) {
    const next = replace(img.src);
    if (next === null) {
      edits.push({ start: img.tag.start, end: img.tag.end, text: '' });
      continue;
    }
    edits.push({ start: img.attr.start, end: img.attr.end, text: `src="${escapeAttribute(next)}"` });
    for (const s of img.srcset) edits.push({ start: s.start, end: s.end, text: '' });
  }
  edits.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const e of edits) {
    if (e.start < at) continue; // inside a tag already removed
    out += html.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + html.slice(at);
}

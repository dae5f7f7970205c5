/**
 * A product's images as the shop is shown them (pure): every image of `images` and every `<img src>`
 * of `content`, resolved against the supplier's origin, named by the relay's own URL once mirrored
 * (`<publicBase>/<sha256>.<ext>`), left out while it is still to be fetched, and left out and reported
 * when it is refused. With mirroring off, the upstream's values pass through unchanged.
 */
import { rewriteContent } from './media-content.js';

/** Why an image is left out (a run's `skipped_images[].reason`). */
export type ImageRefusal =
  | 'not_http'
  | 'bad_url'
  | 'private_address'
  | 'not_an_image'
  | 'too_large'
  | 'not_found'
  | 'http_error'
  | 'timeout'
  | 'unreachable'
  | 'too_many_redirects';

/** What the relay knows of an image URL: mirrored as a file, or refused. */
export type SourceState = { kind: 'mirrored'; sha256: string; ext: string } | { kind: 'refused'; reason: string };

export interface MediaSettings {
  /** MEDIA_MIRROR */
  mirror: boolean;
  /** Where mirrored files are named: MEDIA_PUBLIC_URL, else `/media`. */
  publicBase: string;
  /** The supplier's origin (`http://host:port`): relative URLs are resolved against it. */
  origin: string;
}

/** The settings a product's shown images were made with: another key means they are made again. */
export function mediaKey(s: MediaSettings): string {
  return s.mirror ? `mirror ${s.publicBase} ${s.origin}` : 'off';
}

/** The relay's URL of a mirrored file. */
export function fileUrl(s: Pick<MediaSettings, 'publicBase'>, sha256: string, ext: string): string {
  return `${s.publicBase}/${sha256}.${ext}`;
}

/** A URL as reported (a `data:` URL can be long). */
function reported(raw: string): string {
  return raw.length > 300 ? `${raw.slice(0, 300)}…` : raw;
}

/** The absolute http(s) URL of an image, resolved against the supplier's origin, or why not. */
export function resolveImageUrl(raw: string, origin: string): { url: string } | { refused: 'not_http' | 'bad_url' } {
  const t = raw.trim();
  if (t === '') return { refused: 'bad_url' };
  let u: URL;
  try {
    u = new URL(t, origin);
  } catch {
    return { refused: 'bad_url' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return { refused: 'not_http' };
  u.hash = '';
  return { url: u.href };
}

/** Whether a reference names the supplier: it resolves (relative ones against its origin) to its host name. */
export function namesSupplier(ref: string, origin: string): boolean {
  try {
    const u = new URL(ref.trim(), origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname === new URL(origin).hostname;
  } catch {
    return false;
  }
}

/**
 * A category's icon as the shop is shown it: the relay's URL once mirrored, null while it is still to
 * be fetched or when it was refused, '' when there is none; with mirroring off, the upstream's value.
 */
export function shownIcon(raw: string, known: (url: string) => SourceState | undefined, s: MediaSettings): string | null {
  if (!s.mirror || raw.trim() === '') return raw;
  const r = resolveImageUrl(raw, s.origin);
  if ('refused' in r) return null;
  const state = known(r.url);
  return state?.kind === 'mirrored' ? fileUrl(s, state.sha256, state.ext) : null;
}

/** The absolute URL a category's icon is fetched from (null when there is none, or it is not http(s)). */
export function iconUrl(raw: string, origin: string): string | null {
  if (raw.trim() === '') return null;
  const r = resolveImageUrl(raw, origin);
  return 'url' in r ? r.url : null;
}

export interface ProductMediaInput {
  images?: unknown;
  content?: unknown;
}

export interface RenderedMedia {
  images: string[];
  content: Record<string, string> | null;
  /** Every absolute URL the product uses (mirrored, refused or still to fetch). */
  urls: string[];
  /** URLs the relay knows nothing of yet: to be fetched. */
  pending: string[];
  /** Images left out for good (until their URL changes), with why. */
  skipped: Array<{ url: string; reason: string }>;
}

function imageList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function contentTexts(v: unknown): Record<string, string> | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  return v as Record<string, string>;
}

/**
 * The product's images and content as shown, from what is known of each URL (`known`). An unknown URL
 * is left out and listed in `pending`; a refused one is left out and listed in `skipped`.
 */
export function renderProductMedia(
  input: ProductMediaInput,
  known: (url: string) => SourceState | undefined,
  s: MediaSettings,
): RenderedMedia {
  const content = contentTexts(input.content);
  if (!s.mirror) return { images: imageList(input.images), content, urls: [], pending: [], skipped: [] };
  const urls = new Set<string>();
  const pending = new Set<string>();
  const skipped: RenderedMedia['skipped'] = [];
  const skippedSeen = new Set<string>();
  const skip = (url: string, reason: string): null => {
    const key = `${url}\n${reason}`;
    if (!skippedSeen.has(key)) {
      skippedSeen.add(key);
      skipped.push({ url: reported(url), reason });
    }
    return null;
  };
  const shown = (raw: string): string | null => {
    const r = resolveImageUrl(raw, s.origin);
    if ('refused' in r) return skip(raw, r.refused);
    urls.add(r.url);
    const state = known(r.url);
    if (state === undefined) {
      pending.add(r.url);
      return null;
    }
    if (state.kind === 'refused') return skip(r.url, state.reason);
    return fileUrl(s, state.sha256, state.ext);
  };
  const images: string[] = [];
  for (const raw of imageList(input.images)) {
    const u = shown(raw);
    if (u !== null) images.push(u);
  }
  let outContent: Record<string, string> | null = null;
  if (content !== null) {
    outContent = {};
    for (const [lang, html] of Object.entries(content)) {
      outContent[lang] =
        typeof html === 'string' ? rewriteContent(html, { image: shown, supplier: (ref) => namesSupplier(ref, s.origin) }) : html;
    }
  }
  return { images, content: outContent, urls: [...urls], pending: [...pending], skipped };
}

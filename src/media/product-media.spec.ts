import {
  iconUrl,
  mediaKey,
  namesSupplier,
  renderProductMedia,
  resolveImageUrl,
  shownIcon,
  type MediaSettings,
  type SourceState,
} from './product-media.js';

const settings: MediaSettings = { mirror: true, publicBase: '/media', origin: 'http://supplier.example:8080' };
const sha = 'a'.repeat(64);

describe('resolveImageUrl', () => {
  it('resolves a relative URL against the supplier’s origin and refuses what is not http(s)', () => {
    expect(resolveImageUrl('/uploads/a.png', settings.origin)).toEqual({ url: 'http://supplier.example:8080/uploads/a.png' });
    expect(resolveImageUrl('uploads/a.png#x', settings.origin)).toEqual({ url: 'http://supplier.example:8080/uploads/a.png' });
    expect(resolveImageUrl('//cdn.example/a.png', settings.origin)).toEqual({ url: 'http://cdn.example/a.png' });
    expect(resolveImageUrl('https://cdn.example/a.png', settings.origin)).toEqual({ url: 'https://cdn.example/a.png' });
    expect(resolveImageUrl('data:image/png;base64,AAAA', settings.origin)).toEqual({ refused: 'not_http' });
    expect(resolveImageUrl('javascript:alert(1)', settings.origin)).toEqual({ refused: 'not_http' });
    expect(resolveImageUrl('  ', settings.origin)).toEqual({ refused: 'bad_url' });
    expect(resolveImageUrl('http://[::1', settings.origin)).toEqual({ refused: 'bad_url' });
  });
});

describe('renderProductMedia', () => {
  const known = new Map<string, SourceState>([
    ['http://supplier.example:8080/a.png', { kind: 'mirrored', sha256: sha, ext: 'png' }],
    ['http://supplier.example:8080/bad.png', { kind: 'refused', reason: 'not_found' }],
  ]);
  const input = {
    images: ['/a.png', '/bad.png', '/new.png', 'ftp://x/y.png', 42],
    content: { en: '<p>x</p><img src="/a.png"><img src="/new.png">' },
  };

  it('names mirrored images by the relay’s URL, leaves out the refused (reported) and the unknown (pending)', () => {
    const r = renderProductMedia(input, (u) => known.get(u), settings);
    expect(r.images).toEqual([`/media/${sha}.png`]);
    expect(r.content).toEqual({ en: `<p>x</p><img src="/media/${sha}.png">` });
    expect(r.pending).toEqual(['http://supplier.example:8080/new.png']);
    expect(r.skipped).toEqual([
      { url: 'http://supplier.example:8080/bad.png', reason: 'not_found' },
      { url: 'ftp://x/y.png', reason: 'not_http' },
    ]);
    expect(r.urls.sort()).toEqual([
      'http://supplier.example:8080/a.png',
      'http://supplier.example:8080/bad.png',
      'http://supplier.example:8080/new.png',
    ]);
  });

  it('uses MEDIA_PUBLIC_URL as the base, and passes everything through with mirroring off', () => {
    expect(renderProductMedia(input, (u) => known.get(u), { ...settings, publicBase: 'https://cdn.shop/m' }).images).toEqual([
      `https://cdn.shop/m/${sha}.png`,
    ]);
    const off = renderProductMedia(input, () => undefined, { ...settings, mirror: false });
    expect(off).toEqual({
      images: ['/a.png', '/bad.png', '/new.png', 'ftp://x/y.png'],
      content: input.content,
      urls: [],
      pending: [],
      skipped: [],
    });
  });

  it('has a key that changes with the settings', () => {
    expect(mediaKey(settings)).not.toBe(mediaKey({ ...settings, publicBase: '/x' }));
    expect(mediaKey({ ...settings, mirror: false })).toBe('off');
  });
});

describe('category icons and references to the supplier', () => {
  const states = new Map<string, SourceState>([
    ['http://supplier.example:8080/icons/a.png', { kind: 'mirrored', sha256: sha, ext: 'png' }],
    ['http://supplier.example:8080/icons/bad.png', { kind: 'refused', reason: 'not_found' }],
  ]);
  const known = (u: string) => states.get(u);

  it('shows an icon by the relay’s copy once mirrored, null while pending or refused, as is with mirroring off', () => {
    expect(shownIcon('/icons/a.png', known, settings)).toBe(`/media/${sha}.png`);
    expect(shownIcon('/icons/bad.png', known, settings)).toBeNull();
    expect(shownIcon('/icons/unknown.png', known, settings)).toBeNull();
    expect(shownIcon('ftp://x/a.png', known, settings)).toBeNull();
    expect(shownIcon('', known, settings)).toBe('');
    expect(shownIcon('/icons/unknown.png', known, { ...settings, mirror: false })).toBe('/icons/unknown.png');
    expect(iconUrl('/icons/a.png', settings.origin)).toBe('http://supplier.example:8080/icons/a.png');
    expect(iconUrl('data:image/png;base64,AA', settings.origin)).toBeNull();
  });

  it('knows a reference to the supplier: relative, its host on any port, not another host or scheme', () => {
    expect(namesSupplier('/p/1', settings.origin)).toBe(true);
    expect(namesSupplier('https://supplier.example/x', settings.origin)).toBe(true);
    expect(namesSupplier('https://other.example/x', settings.origin)).toBe(false);
    expect(namesSupplier('mailto:a@supplier.example', settings.origin)).toBe(false);
  });

  it('rewrites the content’s links and image references, fetching the latter', () => {
    const r = renderProductMedia(
      { content: { en: '<a href="/p/2">two</a><video poster="/icons/a.png"></video><img src="/new.png">' } },
      known,
      settings,
    );
    expect(r.content).toEqual({ en: '<a >two</a><video poster="/media/' + sha + '.png"></video>' });
    expect(r.pending).toEqual(['http://supplier.example:8080/new.png']);
  });
});

import { contentImages, rewriteContentImages } from './media-content.js';

describe('contentImages', () => {
  it('finds every <img src> with a real parser: any case, quoting, entities, nested and in templates', () => {
    const html = `<div><IMG SRC='/a.png' alt=x></div><p><img alt="y" src=b.png><img src="c&amp;d.png"></p><template><img src="/t.png"></template><img alt="no src">`;
    expect(contentImages(html).map((i) => i.src)).toEqual(['/a.png', 'b.png', 'c&d.png', '/t.png']);
  });

  it('is not fooled by text or attributes that look like an image', () => {
    const html = `<p title='<img src="/no.png">'>&lt;img src="/no2.png"&gt;</p><!-- <img src="/no3.png"> --><script>var s = '<img src="/no4.png">';</script><img src="/yes.png">`;
    expect(contentImages(html).map((i) => i.src)).toEqual(['/yes.png']);
  });
});

describe('rewriteContentImages', () => {
  it('splices only the src values: everything else stays byte for byte', () => {
    const html = `<p  class="a">Hi &amp; <b>bye</b></p>\n<IMG  alt='x'   SRC='/a.png'  >\n<img src=/b.png>`;
    const out = rewriteContentImages(html, (src) => `/media/${src.slice(1, 2)}.png`);
    expect(out).toBe(`<p  class="a">Hi &amp; <b>bye</b></p>\n<IMG  alt='x'   src="/media/a.png"  >\n<img src="/media/b.png">`);
  });

  it('removes the tag of an image left out, and drops the srcset of one kept', () => {
    const html = `<p>a<img src="/gone.png" alt="g">b</p><img src="/kept.png" srcset="/kept.png 2x, /k3.png 3x" alt="k">`;
    const out = rewriteContentImages(html, (src) => (src === '/gone.png' ? null : '/media/k.png'));
    expect(out).toBe(`<p>ab</p><img src="/media/k.png"  alt="k">`);
  });

  it('escapes the new value and leaves content without images untouched', () => {
    expect(rewriteContentImages('<img src="x">', () => '/m/"q"&.png')).toBe('<img src="/m/&quot;q&quot;&amp;.png">');
    const plain = '<p>no images <i>here</i></p><broken';
    expect(rewriteContentImages(plain, () => 'never')).toBe(plain);
  });
});

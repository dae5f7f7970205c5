import { contentImages, cssUrls, rewriteContent, rewriteContentImages, srcsetCandidates } from './media-content.js';

describe('contentImages', () => {
  it('finds every <img src> with a real parser: any case, quoting, entities, nested and in templates', () => {
    const html =
      `<div><IMG SRC='/a.png' alt=x></div><p><img alt="y" src=b.png><img src="c&amp;d.png"></p><template><img ` +
      `src="/t.png"></template><img alt="no src">`;
    expect(contentImages(html).map((i) => i.src)).toEqual(['/a.png', 'b.png', 'c&d.png', '/t.png']);
  });

  it('is not fooled by text or attributes that look like an image', () => {
    const html =
      `<p title='<img src="/no.png">'>&lt;img src="/no2.png"&gt;</p><!-- <img src="/no3.png"> --><script>var ` +
      `s = '<img src="/no4.png">';</script><img src="/yes.png">`;
    expect(contentImages(html).map((i) => i.src)).toEqual(['/yes.png']);
  });
});

describe('rewriteContentImages', () => {
  it('splices only the src values: everything else stays byte for byte', () => {
    const html = `<p  class="a">Hi &amp; <b>bye</b></p>\n<IMG  alt='x'   SRC='/a.png'  >\n<img src=/b.png>`;
    const out = rewriteContentImages(html, (src) => `/media/${src.slice(1, 2)}.png`);
    expect(out).toBe(`<p  class="a">Hi &amp; <b>bye</b></p>\n<IMG  alt='x'   src="/media/a.png"  >\n<img src="/media/b.png">`);
  });

  it('removes the tag of an image left out, and rewrites the srcset of one kept', () => {
    const html =
      `<p>a<img src="/gone.png" alt="g" srcset="/gone.png 2x">b</p><img src="/kept.png" srcset="/kept.png 2x, ` + `/k3.png 3x" alt="k">`;
    const out = rewriteContentImages(html, (src) => (src === '/gone.png' ? null : `/media${src}`));
    expect(out).toBe(`<p>ab</p><img src="/media/kept.png" srcset="/media/kept.png 2x, /media/k3.png 3x" alt="k">`);
  });

  it('escapes the new value and leaves content without images untouched', () => {
    expect(rewriteContentImages('<img src="x">', () => '/m/"q"&.png')).toBe('<img src="/m/&quot;q&quot;&amp;.png">');
    const plain = '<p>no images <i>here</i></p><broken';
    expect(rewriteContentImages(plain, () => 'never')).toBe(plain);
  });
});

describe('srcsetCandidates and cssUrls', () => {
  it('reads srcset candidates as HTML does (commas inside URLs, descriptors, stray commas)', () => {
    expect(srcsetCandidates(' /a.png 1x,/b,c.png 2x , /d.png,, /e.png 100w')).toEqual([
      { url: '/a.png', descriptors: '1x' },
      { url: '/b,c.png', descriptors: '2x' },
      { url: '/d.png', descriptors: '' },
      { url: '/e.png', descriptors: '100w' },
    ]);
  });

  it('finds url(…) references, quoted or not, and skips strings and comments', () => {
    const css = `background: URL( '/a.png' ) no-repeat; content: "url(/no.png)"; /* url(/no2.png) */ mask:url(/b.png);x-url(/no3.png)`;
    expect(cssUrls(css).map((r) => r.url)).toEqual(['/a.png', '/b.png']);
  });
});

describe('rewriteContent: every reference to the supplier', () => {
  const supplierHost = 'shop.supplier.test';
  const supplier = (ref: string) => {
    try {
      return new URL(ref, `http://${supplierHost}:8080`).hostname === supplierHost;
    } catch {
      return false;
    }
  };
  const mirrored = new Set(['/p.png', 'http://shop.supplier.test:8080/poster.png', '/bg.png', '/s1.png', '/s2.png']);
  const image = (src: string) => (mirrored.has(src) ? `/media/${src.split('/').pop()}` : null);

  it('removes the supplier’s links (relative ones too) and keeps the element, its text, fragments and other sites', () => {
    const html =
      `<p>See <a href="/product/7" class="x">our page</a>, <A HREF='http://shop.supplier.test:8080/x'>here</A>, <a href="#top">top</a>` +
      ` and <a href="https://other.example/y">elsewhere</a> <a href="mailto:a@b.c">mail</a></p>` +
      `<form action="/buy"><button formaction="//shop.supplier.test/z">Go</button></form><iframe src="/embed"></iframe>` +
      `<video src="/v.mp4"><source src="/v.webm" type="video/webm"><track src="/t.vtt"></video><blockquote cite="/q">q</blockquote>` +
      `<div data-zoom="http://shop.supplier.test/zoom.png" data-x="/relative-is-text">t</div>`;
    expect(rewriteContent(html, { image, supplier })).toBe(
      `<p>See <a  class="x">our page</a>, <A >here</A>, <a href="#top">top</a>` +
        ` and <a href="https://other.example/y">elsewhere</a> <a href="mailto:a@b.c">mail</a></p>` +
        `<form ><button >Go</button></form><iframe ></iframe>` +
        `<video ><source  type="video/webm"><track ></video><blockquote >q</blockquote>` +
        `<div  data-x="/relative-is-text">t</div>`,
    );
  });

  it('rewrites image references (srcset, poster, background, style url) to the mirror when mirrored, else removes the attribute', () => {
    const html =
      `<picture><source srcset="/s1.png 1x, /s2.png 2x"><source srcset="/s1.png 1x, /s3.png 2x"><img src="/p.png"></picture>` +
      `<video poster="http://shop.supplier.test:8080/poster.png" controls></video><video poster="/np.png">x</video>` +
      `<div background="/bg.png">c</div><div style="color: red; background: url('/bg.png')">s</div>` +
      `<div style="background-image:url(/nope.png);color:blue">n</div><span style="color: green">g</span>`;
    expect(rewriteContent(html, { image, supplier })).toBe(
      `<picture><source srcset="/media/s1.png 1x, /media/s2.png 2x"><source ><img src="/media/p.png"></picture>` +
        `<video poster="/media/poster.png" controls></video><video >x</video>` +
        `<div background="/media/bg.png">c</div><div style="color: red; background: url(&quot;/media/bg.png&quot;)">s</div>` +
        `<div >n</div><span style="color: green">g</span>`,
    );
  });

  it('leaves content naming nothing of the supplier byte for byte', () => {
    const html = `<p class=a>Hi <a href="https://other.example/">x</a> <a href="#f">f</a></p>\n<!-- /c --><b>b</b>`;
    expect(rewriteContent(html, { image, supplier })).toBe(html);
  });
});

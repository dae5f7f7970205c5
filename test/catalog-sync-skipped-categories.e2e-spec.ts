/**
 * A category whose shape is wrong (a `null` name, as a real Dujiao-Next server answered one) no longer
 * fails the whole sync: it is left out and reported in the run (`skipped_categories`: its id and why),
 * the other categories and every product are stored, and a stored category that comes back badly
 * shaped is kept as it was (not unlisted: the upstream still lists it).
 */
import { useAppSuite } from './support/app-suite.js';
import { runSync } from './support/sync-run.js';

interface Category {
  id: number;
  name: Record<string, string>;
  listed: boolean;
  children: Category[];
}

describe('catalog sync: a category whose shape is wrong', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 12 } }, workers: false });
  const tree = async () => {
    const roots = (await suite.app.http.get('/internal/catalog/categories')).data.categories as Category[];
    return roots.flatMap((r) => [r, ...r.children]);
  };

  it('is left out and reported; the others and every product are stored; a stored one stays listed as it was', async () => {
    const first = await runSync(suite.app.http, 'full');
    expect(first).toMatchObject({ status: 'succeeded', skipped_categories: [] });
    const stored = await tree();
    const upstream = JSON.parse(suite.sandbox.catalog.categoriesJson()) as Array<Record<string, unknown>>;
    expect(stored).toHaveLength(upstream.length);
    const known = upstream[0];
    // the upstream now names one stored category with a null name, and lists a new one with a null name
    const broken = [{ ...known, name: null }, ...upstream.slice(1), { ...upstream[1], id: 9999, slug: 'broken', name: null }];
    suite.sandbox.faults.set({
      rules: [{ operation: 'categories', kind: 'garbage_after', body: JSON.stringify({ ok: true, categories: broken }) }],
    });
    const run = await runSync(suite.app.http, 'full');
    const reason = 'name: expected an object of texts by language, got null';
    expect(run).toMatchObject({
      status: 'succeeded',
      error: null,
      skipped_categories: [
        { category_id: known.id, reason },
        { category_id: 9999, reason },
      ],
    });
    expect(run.products_seen).toBe(12);
    const after = await tree();
    expect(after.map((c) => c.id).sort()).toEqual(stored.map((c) => c.id).sort());
    expect(after.find((c) => c.id === known.id)).toMatchObject({ name: known.name, listed: true });
  });
});

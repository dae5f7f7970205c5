/**
 * The rules of docs/architecture.md that the source text shows, checked on the tree (the ones an
 * import shows are ESLint's: no process.env outside config/, the sandbox imports only signing/, every
 * metric in metrics.service.ts, stored items opened only by the presenter and the updater).
 * - The catalog reads the orders' tables in one statement only (the products ordered lately, for the
 *   sync's re-reads) and never writes them.
 * - Every file the document calls pure exists, imports no framework, database or I/O module, and has
 *   a spec beside it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Statements that name one of the orders' tables, as `file: VERB table`. */
export function ordersTableUses(file: string, text: string): string[] {
  const uses: string[] = [];
  const re = /\b(FROM|JOIN|UPDATE|INTO|DELETE\s+FROM)\s+(orders|order_attempts|order_events|order_refunds)\b/gi;
  for (const m of text.matchAll(re)) uses.push(`${file}: ${m[1].toUpperCase().replace(/\s+/, ' ')} ${m[2]}`);
  return uses;
}

/** The `*.ts` files of the rows of docs/architecture.md's file tables whose description says "pure". */
export function filesCalledPure(doc: string): string[] {
  const names = new Set<string>();
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | `a.ts`, `b.ts` | pure: … |  (a folder table's first cell is a folder, `x/`)
    if (cells.length < 4 || !/\bpure\b/i.test(cells[2])) continue;
    for (const m of cells[1].matchAll(/`([\w.-]+\.ts)`/g)) names.add(m[1]);
  }
  return [...names];
}

/** What a pure file may not import: the framework, the database, the network, the file system. */
const IMPURE_IMPORT =
  /^import\s[^;]*?from\s+'(@nestjs\/[^']*|typeorm|pg|pg-copy-streams|axios|fastify|node:(fs|fs\/promises|http|https|net|child_process|worker_threads))'/gm;

describe('the rules of docs/architecture.md', () => {
  const files = sourceFiles(SRC);
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

  it("the catalog reads the orders' tables only for the products ordered lately, and writes none of them", () => {
    const uses = files
      .filter((f) => f.startsWith(join(SRC, 'catalog')))
      .flatMap((f) => ordersTableUses(relative(SRC, f), readFileSync(f, 'utf8')));
    expect(uses).toEqual(['catalog/catalog.repository.ts: FROM orders']);
    const repository = readFileSync(join(SRC, 'catalog/catalog.repository.ts'), 'utf8');
    const method = repository.slice(repository.indexOf('async orderedProductsToReread('));
    expect(ordersTableUses('', method.slice(0, method.indexOf('\n  }\n')))).toHaveLength(1);
  });

  it('finds a statement on an orders table wherever it is', () => {
    expect(
      ordersTableUses(
        'x.ts',
        'SELECT 1 FROM orders o JOIN order_attempts a ON …; UPDATE orders SET; insert into order_events; DELETE  FROM order_refunds',
      ),
    ).toEqual([
      'x.ts: FROM orders',
      'x.ts: JOIN order_attempts',
      'x.ts: UPDATE orders',
      'x.ts: INTO order_events',
      'x.ts: DELETE FROM order_refunds',
    ]);
    expect(ordersTableUses('x.ts', 'the orders of a product; orders_poll_due; FROM catalog_orders_view')).toEqual([]);
  });

  it('each file it calls pure exists once, imports no framework, database or I/O, and has a spec beside it', () => {
    const pure = filesCalledPure(doc);
    expect(pure.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const name of pure) {
      const found = files.filter((f) => basename(f) === name);
      if (found.length !== 1) {
        problems.push(`${name}: ${found.length} files of that name under src/`);
        continue;
      }
      const [file] = found;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPURE_IMPORT)) problems.push(`${relative(SRC, file)}: imports ${m[1]}`);
      if (!readdirSync(dirname(file)).includes(name.replace(/\.ts$/, '.spec.ts')))
        problems.push(`${relative(SRC, file)}: no spec beside it`);
    }
    expect(problems).toEqual([]);
  });

  it('reads the pure files from the tables, and tells an impure import', () => {
    const table = [
      '| file | holds |',
      '|---|---|',
      '| `a.ts`, `b-c.ts` | pure: rules |',
      '| `d.service.ts` | the service |',
      '| `orders/` | the pure thing (`e.ts`) |',
    ].join('\n');
    expect(filesCalledPure(table)).toEqual(['a.ts', 'b-c.ts']);
    const text =
      "import { Injectable } from '@nestjs/common';\nimport type { X } from './x.js';\nimport { readFileSync } from 'node:fs';\n";
    expect([...text.matchAll(IMPURE_IMPORT)].map((m) => m[1])).toEqual(['@nestjs/common', 'node:fs']);
  });
});

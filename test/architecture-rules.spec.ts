/**
 * The rules of docs/architecture.md that the source text shows, checked on the tree (the ones an
 * import shows are ESLint's: no process.env outside config/, the sandbox imports only signing/, every
 * metric in metrics.service.ts, stored items opened only by the presenter and the updater).
 * - The catalog reads the orders' tables in one statement only (the products ordered lately, for the
 *   sync's re-reads) and never writes them.
 * - Every file the document calls pure exists, imports no framework, database or I/O module, and has
 *   a spec beside it.
 * - No cycle between services: the value imports of src/ and the constructor dependencies of its
 *   injectable classes form no loop (news goes back to a service that depends on the sender through
 *   a domain event, orders/domain-events.ts), and the table of domain events names every publisher and
 *   handler of each.
 * - One exponential backoff (common/backoff.ts): no other file of src/ raises to a power.
 * - One loop primitive for periodic work (common/wake-loop.ts): a timer of src/ (setTimeout,
 *   setInterval) is one of the one-shot or heartbeat timers TIMERS lists, each with its reason.
 * - No line over 140 characters (prettier's printWidth) in src/, test/, console/src/ and bench/, generated
 *   files (`*.generated.ts`) aside: what prettier cannot wrap (strings, templates, comments, test names) is
 *   split by hand or reworded.
 * - The section "Files over 500 lines" names every file of src/ and test/ over 500 lines, and only those.
 * - The orders' tables have one home for their writes: OrderTx (order-tx.ts) inserts and deletes every
 *   row of them and is the only one to move an order's or an attempt's state; outside it, an update
 *   sets only the lease, schedule and flag columns ORDERS_WRITES_OUTSIDE_TX lists; only OrderWrites opens
 *   an OrderTx, and it runs a statement in a caller's transaction only in `flagStuck`. OrderReads only
 *   reads: no statement of it writes or locks a row, and it opens no transaction.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';

import { ROOT, SRC, IMPURE_IMPORT, sourceFiles } from './support/source-files.js';

/** Statements that name one of the orders' tables, as `file: VERB table`. */
export function ordersTableUses(file: string, text: string): string[] {
  const uses: string[] = [];
  const re = /\b(FROM|JOIN|UPDATE|INTO|DELETE\s+FROM)\s+(orders|order_attempts|order_events|order_refunds)\b/gi;
  for (const m of text.matchAll(re)) uses.push(`${file}: ${m[1].toUpperCase().replace(/\s+/, ' ')} ${m[2]}`);
  return uses;
}

const ORDERS_TABLES = 'orders|order_attempts|order_events|order_refunds';

/**
 * The writes of `text` on the orders' tables: `file: INSERT INTO t`, `file: DELETE FROM t`, and one
 * `file: UPDATE t.column` per column an UPDATE sets (a SET list built at run time shows no column).
 */
export function ordersWrites(file: string, text: string): string[] {
  const writes: string[] = [];
  for (const m of text.matchAll(new RegExp(String.raw`\b(INSERT\s+INTO|DELETE\s+FROM)\s+(${ORDERS_TABLES})\b`, 'gi')))
    writes.push(`${file}: ${m[1].toUpperCase().replace(/\s+/, ' ')} ${m[2]}`);
  // UPDATE <table> [[AS] alias] SET <list>, the list ending at WHERE, RETURNING, FROM or the string's end
  const table = String.raw`\bUPDATE\s+(${ORDERS_TABLES})\b(?:\s+(?:AS\s+)?(?!SET\b)\w+)?`;
  const update = new RegExp(String.raw`${table}\s+SET\s+([\s\S]*?)(?=\bWHERE\b|\bRETURNING\b|\bFROM\b|` + '`|$)', 'gi');
  for (const m of text.matchAll(update)) {
    for (const c of m[2].matchAll(/(?:^|,)\s*(\w+)\s*=/g)) writes.push(`${file}: UPDATE ${m[1]}.${c[1]}`);
  }
  return writes;
}

/** What makes `text` more than reads: a literal that writes or locks; a transaction, a caller's (`.em`), an OrderTx. */
export function readsOnlyProblems(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const literal = /`([^`]*)`|'([^'\n]*)'|"([^"\n]*)"/g;
  const problems = [...code.matchAll(literal)]
    .map((m) => m[1] ?? m[2] ?? m[3])
    .filter((l) => /\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|LOCK|SHARE)\b|advisory|set_config/i.test(l));
  const bare = code.replace(literal, "''");
  for (const m of bare.matchAll(/\.(em\b|transaction\(|pipelinedTransaction\()|\bOrderTx\b/g)) problems.push(`code: ${m[0]}`);
  return problems;
}

/**
 * The columns of the orders' tables written outside OrderTx, by file: leases, schedules and flags,
 * never a status, an amount, an item or a row of its own. Everything else on those tables is written
 * by order-tx.ts.
 */
const ORDERS_WRITES_OUTSIDE_TX: Record<string, string[]> = {
  // the poll claim's lease, the poll schedule, the stuck flag; an attempt's sending lease (claims, re-sends)
  'orders/order-writes.repository.ts': [
    'orders.poll_lease_until',
    'orders.next_poll_at',
    'orders.poll_interval_ms',
    'orders.stuck_since',
    'order_attempts.sending_until',
    'order_attempts.sends',
  ],
  // the reconciliation's schedule
  'reconciliation/reconciliation.repository.ts': ['orders.reconcile_planned_at', 'orders.reconcile_at', 'orders.reconciled_at'],
  // a callback brings the order's next poll sooner
  'callbacks/callback-inbox.repository.ts': ['orders.next_poll_at'],
};

/** The `*.ts` files of the rows of docs/architecture.md's file tables whose description says "pure". */
export function filesCalledPure(doc: string): string[] {
  const names = new Set<string>();
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | `a.ts`, `b.ts` | pure: … |  (a folder table's first cell is a folder, `x/`)
    if (cells.length < 4 || !/\bpure\b/i.test(cells[2])) continue;
    for (const m of cells[1].matchAll(/`([\w.-]+\.ts)`/g)) names.add(m[1]);
  }
  // and in prose and the folders' table: `x.ts`, pure · `x.ts` (pure · pure in `x.ts` · pure rules in `x.ts`
  for (const m of doc.matchAll(/`([\w./-]+\.ts)`(?:,| \()\s*pure\b|\bpure(?: rules| policy)? in `([\w./-]+\.ts)`/g))
    names.add(basename(m[1] ?? m[2]));
  return [...names];
}

/** The relative modules `text` imports as values, resolved against `file` (`import type` and all-type braces left out). */
export function valueImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^import\s+(type\s+)?([^;]*?)\s*from\s+'(\.{1,2}\/[^']+)';/gm)) {
    if (m[1]) continue;
    const braces = /^\{([^}]*)\}$/.exec(m[2].trim());
    if (braces && braces[1].split(',').every((s) => s.trim() === '' || /^type\s/.test(s.trim()))) continue;
    found.push(join(dirname(file), m[3].replace(/\.js$/, '.ts')));
  }
  return found;
}

/** The injectable classes of `text` with the types of their constructors' parameters. */
export function constructorDependencies(text: string): Map<string, string[]> {
  const deps = new Map<string, string[]>();
  for (const m of text.matchAll(/@Injectable\(\)\s*export\s+class\s+(\w+)[^{]*\{/g)) {
    const body = text.slice(m.index + m[0].length);
    const next = body.search(/\n@Injectable\(\)|\nexport class /);
    const cls = next < 0 ? body : body.slice(0, next);
    const ctor = /\n {2}constructor\(([\s\S]*?)\n? {0,2}\)\s*\{/.exec(cls);
    deps.set(m[1], ctor ? [...ctor[1].matchAll(/\b\w+\s*:\s*([A-Z]\w*)/g)].map((p) => p[1]) : []);
  }
  return deps;
}

/** One cycle of `graph` (its nodes, the first repeated at the end), or null when it has none. */
export function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

/** The rows of docs/architecture.md's table of domain events: event → publishing files and handling files. */
export function domainEventTable(doc: string): Map<string, { publishers: string[]; handlers: string[] }> {
  const table = new Map<string, { publishers: string[]; handlers: string[] }>();
  const section = doc.slice(doc.indexOf('### Domain events'));
  for (const line of section.slice(0, section.indexOf('\n\n', section.indexOf('|---'))).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const event = /^`(\w+)`$/.exec(cells[1] ?? '');
    if (!event) continue;
    const files = (cell: string) => [...cell.matchAll(/`([\w.-]+\.ts)`/g)].map((f) => f[1]).sort();
    table.set(event[1], { publishers: files(cells[2]), handlers: files(cells[3]) });
  }
  return table;
}

/** `text` without its comments (block comments, and lines that are a `//` comment), for rules about code. */
export function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/** The exponentiations of `text` (`**`, `Math.pow`), comments left out. */
export function powers(text: string): string[] {
  return [...withoutComments(text).matchAll(/[\w)\]]\s*\*\*\s*[\w(-]|\bMath\.pow\(/g)].map((m) => m[0]);
}

/**
 * The files of src/ (outside the sandbox, its own world) that may start a timer, and why: each is a
 * one-shot timer (a deadline, a wait, a delayed single call) or a heartbeat beside work in flight.
 * Periodic work runs on WakeLoop. One loop is written by hand: the request budget's queue, which
 * re-asks the ledger after the wait it names.
 */
const TIMERS: Record<string, string> = {
  'common/wake-loop.ts': 'the loop of periodic work',
  'upstream/upstream-http.adapter.ts': "an exchange's connect and response timeouts",
  'ops/health.service.ts': "a health call's deadline",
  'ops/upstream-monitor.service.ts': 'the ping soon after a spend (one call), the bound on the shutdown wait',
  'catalog/product-pager.ts': 'an abortable wait between page tries',
  'catalog/sync-run-lease.service.ts': "a running sync's heartbeat",
  'reconciliation/reconciliation.service.ts': "a running reconciliation's heartbeat",
  'database/data-dir-lock.ts': "the lock file's heartbeat, the wait between two tries to take it",
  'budget/upstream-budget.service.ts': "a waiter's deadline, the end of a block, the queue's next ask of the ledger",
  'cli/relay-cli.ts': 'the wait between two looks at a sync run',
  'main.ts': 'the forced exit when a shutdown hangs',
};

/** The files of docs/architecture.md's "Files over 500 lines": its bullets' `src/…` paths and the `test/` files of its last paragraph. */
export function filesNamedLong(doc: string): string[] {
  const start = doc.indexOf('## Files over 500 lines');
  const rest = doc.slice(start + 1);
  const section = rest.slice(0, rest.search(/\n## /) >= 0 ? rest.search(/\n## /) : undefined);
  const named = [...section.matchAll(/^- `((?:src|test)\/[\w./-]+\.ts)`/gm)].map((m) => m[1]);
  const tests = /Under `test\/`,([\s\S]*?)are over 500 lines/.exec(section);
  for (const m of tests?.[1].matchAll(/`([\w.-]+\.ts)`/g) ?? []) named.push(`test/${m[1]}`);
  return named.sort();
}

function linesOf(path: string): number {
  const text = readFileSync(path, 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

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

  it("writes the orders' tables in OrderTx, and outside it only the leases, schedules and flags listed", () => {
    const outside = files
      .filter((f) => !f.endsWith(join('orders', 'order-tx.ts')))
      .flatMap((f) => ordersWrites(relative(SRC, f), readFileSync(f, 'utf8')));
    expect(outside).toEqual(expect.arrayContaining(['orders/order-writes.repository.ts: UPDATE orders.poll_lease_until']));
    const allowed = new Set(Object.entries(ORDERS_WRITES_OUTSIDE_TX).flatMap(([file, cols]) => cols.map((c) => `${file}: UPDATE ${c}`)));
    expect(outside.filter((w) => !allowed.has(w))).toEqual([]);
    const inTx = ordersWrites('order-tx.ts', readFileSync(join(SRC, 'orders/order-tx.ts'), 'utf8'));
    expect(inTx).toEqual(expect.arrayContaining(['order-tx.ts: INSERT INTO orders', 'order-tx.ts: INSERT INTO order_refunds']));
  });

  it("opens an OrderTx only in OrderWrites, whose statements run outside a caller's transaction but flagStuck's", () => {
    const opening = files.filter((f) => /\bnew OrderTx\(/.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
    expect(opening).toEqual(['orders/order-writes.repository.ts']);
    const text = readFileSync(join(SRC, 'orders/order-writes.repository.ts'), 'utf8');
    const start = text.indexOf('  async flagStuck(');
    expect(start).toBeGreaterThan(0);
    const end = text.indexOf('\n  }\n', start);
    const elsewhere = text.slice(0, start) + text.slice(end);
    expect(text.slice(start, end)).toMatch(/\btx\.em\b/);
    expect(elsewhere.match(/\b\w+\.em\b/g) ?? []).toEqual([]);
  });

  it('runs only reads in OrderReads: no write, no lock, no transaction', () => {
    const text = readFileSync(join(SRC, 'orders/order-reads.repository.ts'), 'utf8');
    expect(text).toMatch(/\bexport class OrderReads\b/);
    expect(readsOnlyProblems(text)).toEqual([]);
  });

  it('tells a write, a lock or a transaction in a reads file', () => {
    expect(readsOnlyProblems('const A = `SELECT o.* FROM orders o`; // update\n/** FOR UPDATE, in a comment */\n')).toEqual([]);
    const text = [
      "`UPDATE orders SET x = 1`; 'insert into order_events (a) VALUES (1)'; `SELECT 1 FROM orders FOR UPDATE SKIP LOCKED`;",
      "`SELECT 1 FROM order_attempts FOR SHARE`; `DELETE FROM order_refunds`; 'SELECT pg_advisory_xact_lock(1)';",
      'this.dataSource.transaction(async (em) => em); tx.em.query(`SELECT 1`); new OrderTx(m);',
    ].join('\n');
    expect(readsOnlyProblems(text)).toEqual([
      'UPDATE orders SET x = 1',
      'insert into order_events (a) VALUES (1)',
      'SELECT 1 FROM orders FOR UPDATE SKIP LOCKED',
      'SELECT 1 FROM order_attempts FOR SHARE',
      'DELETE FROM order_refunds',
      'SELECT pg_advisory_xact_lock(1)',
      'code: .transaction(',
      'code: .em',
      'code: OrderTx',
    ]);
  });

  it("reads the writes on the orders' tables and the columns an UPDATE sets", () => {
    const text = [
      'UPDATE orders SET next_poll_at = $2, poll_interval_ms = $3 WHERE status = ANY($1)',
      "UPDATE order_attempts SET sending_until = ${leaseEnd('$2::int')}, sends = sends + 1 WHERE id IN (SELECT 1)",
      'UPDATE orders o SET stuck_since = NULL WHERE o.stuck_since IS NOT NULL',
      'WITH o AS (INSERT INTO orders (a) VALUES (1) RETURNING *) DELETE FROM order_refunds; insert into order_events',
      'UPDATE orders_archive SET x = 1; UPDATE catalog_skus SET listed = false',
    ].join('\n');
    expect(ordersWrites('x.ts', text)).toEqual([
      'x.ts: INSERT INTO orders',
      'x.ts: DELETE FROM order_refunds',
      'x.ts: INSERT INTO order_events',
      'x.ts: UPDATE orders.next_poll_at',
      'x.ts: UPDATE orders.poll_interval_ms',
      'x.ts: UPDATE order_attempts.sending_until',
      'x.ts: UPDATE order_attempts.sends',
      'x.ts: UPDATE orders.stuck_since',
    ]);
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
      '| `ops/` | health, its rules (`f.ts`, pure: x), the plan (`g/h.ts` (pure, y)), the pure rules in `i.ts`; `j.ts`, the service |',
    ].join('\n');
    expect(filesCalledPure(table)).toEqual(['a.ts', 'b-c.ts', 'f.ts', 'h.ts', 'i.ts']);
    const text =
      "import { Injectable } from '@nestjs/common';\nimport type { X } from './x.js';\nimport { readFileSync } from 'node:fs';\n";
    expect([...text.matchAll(IMPURE_IMPORT)].map((m) => m[1])).toEqual(['@nestjs/common', 'node:fs']);
  });

  it('has no cycle of value imports between the files of src/', () => {
    const graph = new Map(files.map((f) => [f, valueImports(f, readFileSync(f, 'utf8'))]));
    expect(findCycle(graph)?.map((f) => relative(SRC, f)) ?? null).toBeNull();
  });

  it('has no cycle of constructor dependencies between the injectable classes of src/', () => {
    const graph = new Map(files.flatMap((f) => [...constructorDependencies(readFileSync(f, 'utf8'))]));
    expect(graph.get('CallbackProcessor')).toEqual(expect.arrayContaining(['OrderFollowService', 'DomainEvents']));
    expect(graph.get('OrderQueue')).toEqual(expect.arrayContaining(['QueuedOrderSender']));
    expect(findCycle(graph)).toBeNull();
  });

  it('finds a cycle, reads value imports and constructors', () => {
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c', 'x']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual(['a', 'b', 'c', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', ['b', 'c']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toBeNull();
    const text = [
      "import { Injectable } from '@nestjs/common';",
      "import type { A } from './a.js';",
      "import { type B, type C } from '../b.js';",
      "import { D, type E } from './d.js';",
      "import {\n  F,\n} from './f.js';",
      '',
      '@Injectable()',
      'export class OrderQueue {',
      '  private readonly x = 1;',
      '  constructor(',
      '    private readonly relay: OrderRelayService,',
      '    events: DomainEvents,',
      '  ) {}',
      '  wake(): void {}',
      '}',
      '@Injectable()',
      'export class Plain {',
      '  constructor(private readonly config: AppConfig) {}',
      '}',
    ].join('\n');
    expect(valueImports('/s/orders/q.ts', text)).toEqual(['/s/orders/d.ts', '/s/orders/f.ts']);
    expect(constructorDependencies(text)).toEqual(
      new Map([
        ['OrderQueue', ['OrderRelayService', 'DomainEvents']],
        ['Plain', ['AppConfig']],
      ]),
    );
  });

  it('the table of domain events names every file that publishes or handles each event', () => {
    const table = domainEventTable(doc);
    expect([...table.keys()].sort()).toEqual(['order_queued', 'order_read_due', 'order_settled']);
    const inCode = new Map<string, { publishers: Set<string>; handlers: Set<string> }>();
    const entry = (event: string) => inCode.get(event) ?? inCode.set(event, { publishers: new Set(), handlers: new Set() }).get(event)!;
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/\.publish\(\{\s*type:\s*'(\w+)'/g)) entry(m[1]).publishers.add(basename(f));
      for (const m of text.matchAll(/\.subscribe\(\s*'(\w+)'/g)) entry(m[1]).handlers.add(basename(f));
    }
    const code = new Map(
      [...inCode].map(([event, e]) => [event, { publishers: [...e.publishers].sort(), handlers: [...e.handlers].sort() }]),
    );
    expect(code).toEqual(table);
  });

  it('has one exponential backoff: no file of src/ but common/backoff.ts raises to a power', () => {
    const found = files
      .filter((f) => !f.endsWith(join('common', 'backoff.ts')))
      .flatMap((f) => powers(readFileSync(f, 'utf8')).map(() => relative(SRC, f)));
    expect(found).toEqual([]);
    expect(powers('/** a ** b */\n// 2 ** n\nconst w = base * 2 ** n; Math.pow(2, n); x = y ** (k + 1); const s = "/**";')).toEqual([
      '2 ** n',
      'Math.pow(',
      'y ** (',
    ]);
  });

  it('runs periodic work on WakeLoop: only the listed files start a timer', () => {
    const timers = files
      .filter((f) => !f.startsWith(join(SRC, 'sandbox')))
      .filter((f) => /\bset(Timeout|Interval)\(/.test(withoutComments(readFileSync(f, 'utf8'))))
      .map((f) => relative(SRC, f))
      .sort();
    expect(timers).toEqual(Object.keys(TIMERS).sort());
  });

  it('has no line over 140 characters in src/, test/, console/src/ and bench/ (but generated files)', () => {
    const tree = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        if (name === 'node_modules' || name.startsWith('.')) return [];
        return statSync(path).isDirectory() ? tree(path) : /\.(ts|mjs)$/.test(name) ? [path] : [];
      });
    // the generated files (console/src/api.generated.ts, src/database/rows.generated.ts) are written by
    // their generators (npm run console:types, npm run db:types), not by hand
    const long = ['src', 'test', 'console/src', 'bench']
      .flatMap((dir) => tree(join(ROOT, dir)))
      .map((f) => relative(ROOT, f))
      .filter((f) => !f.endsWith('.generated.ts'))
      .flatMap((f) =>
        readFileSync(join(ROOT, f), 'utf8')
          .split('\n')
          .flatMap((line, i) => (line.length > 140 ? [`${f}:${i + 1}: ${line.length}`] : [])),
      );
    expect(long).toEqual([]);
  });

  it('names every file of src/ and test/ over 500 lines in "Files over 500 lines", and only those', () => {
    const tree = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        if (name === 'node_modules' || name.startsWith('.')) return [];
        return statSync(path).isDirectory() ? tree(path) : name.endsWith('.ts') ? [path] : [];
      });
    const long = [...tree(SRC), ...tree(join(ROOT, 'test'))]
      .filter((f) => linesOf(f) > 500)
      .map((f) => relative(ROOT, f))
      .sort();
    expect(long.length).toBeGreaterThan(3);
    expect(filesNamedLong(doc)).toEqual(long);
  });
});

/** The operator console: login gate, layout, and the page for the current hash route. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getToken, onUnauthorized, setToken } from './api.js';
import { html } from './html.js';
import { CatalogPage } from './pages/catalog.js';
import { DashboardPage } from './pages/dashboard.js';
import { LoginPage } from './pages/login.js';
import { OfferPage, OffersPage } from './pages/offers.js';
import { OrderPage } from './pages/order.js';
import { OrdersPage } from './pages/orders.js';
import { PricingPage } from './pages/pricing.js';
import { ReconciliationPage } from './pages/reconciliation.js';
import { SkuPage } from './pages/sku.js';
import { SuppliersPage } from './pages/suppliers.js';
import { SyncPage } from './pages/sync.js';
import { useRoute, type Route } from './router.js';

const NAV: Array<[string, string, string]> = [
  ['', 'Dashboard', '#/'],
  ['suppliers', 'Suppliers', '#/suppliers'],
  ['orders', 'Orders', '#/orders'],
  ['catalog', 'Catalog', '#/catalog'],
  ['offers', 'Offers', '#/offers'],
  ['pricing', 'Pricing rules', '#/pricing'],
  ['sync', 'Sync runs', '#/sync'],
  ['reconciliation', 'Reconciliation', '#/reconciliation'],
];

function Page({ route }: { route: Route }) {
  const [first, second] = route.parts;
  switch (first ?? '') {
    case '':
      return html`<${DashboardPage} />`;
    case 'orders':
      return second ? html`<${OrderPage} key=${second} shopOrderNo=${second} />` : html`<${OrdersPage} query=${route.query} />`;
    case 'catalog':
      return second ? html`<${SkuPage} key=${second} skuCode=${second} />` : html`<${CatalogPage} query=${route.query} />`;
    case 'offers':
      return second ? html`<${OfferPage} key=${second} code=${second} />` : html`<${OffersPage} query=${route.query} />`;
    case 'pricing':
      return html`<${PricingPage} query=${route.query} />`;
    case 'suppliers':
      return html`<${SuppliersPage} />`;
    case 'sync':
      return html`<${SyncPage} />`;
    case 'reconciliation':
      return html`<${ReconciliationPage} query=${route.query} />`;
    default:
      return html`<div class="card">
        <h1>Not found</h1>
        <p>No page at <code>${location.hash}</code>. <a href="#/">Back to the dashboard</a>.</p>
      </div>`;
  }
}

function App() {
  const [token, setTokenState] = useState<string | null>(getToken());
  const [expired, setExpired] = useState(false);
  const route = useRoute();
  useEffect(
    () =>
      onUnauthorized(() => {
        setExpired(true);
        setTokenState(null);
      }),
    [],
  );
  const titleKey = route.parts[0] ?? '';
  useEffect(() => {
    const name = NAV.find(([k]) => k === titleKey)?.[1] ?? 'Console';
    document.title = `${name} · upstream-relay`;
  }, [titleKey]);

  if (!token) {
    return html`<${LoginPage}
      expired=${expired}
      onLogin=${(t: string) => {
        setToken(t);
        setExpired(false);
        setTokenState(t);
      }}
    />`;
  }
  const logout = () => {
    setToken(null);
    setExpired(false);
    setTokenState(null);
  };
  return html`<div class="layout">
    <nav class="side" aria-label="main">
      <a class="brand" href="#/"><img src="/console/favicon.svg" alt="" width="22" height="22" /> upstream-relay</a>
      ${NAV.map(
        ([key, label, link]) =>
          html`<a href=${link} class=${titleKey === key ? 'active' : ''} aria-current=${titleKey === key ? 'page' : null}>${label}</a>`,
      )}
      <button class="btn link logout" onClick=${logout}>Log out</button>
    </nav>
    <main class="main"><${Page} route=${route} /></main>
  </div>`;
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(html`<${App} />`, root);
}

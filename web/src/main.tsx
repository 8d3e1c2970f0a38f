// Beluga's web UI. The hash router and the list, workflow, schedule,
// backfill and cluster pages are the plain modules under legacy/; the
// pages that need a graph library (instance, editor, grid, overview) are
// React components mounted by the same router.
import '@xyflow/react/dist/style.css';
import './legacy/style.css';
import './app.css';
import {StrictMode, type ReactElement} from 'react';
import {createRoot} from 'react-dom/client';
import {start} from './legacy/app.js';
import {toYAML} from './legacy/yaml.js';
import {h, localInput, patch, rfc3339Local} from './legacy/dom.js';
import {Auth} from './Auth';
import {InstancePage} from './InstancePage';
import {EditorPage} from './EditorPage';
import {GridPage} from './GridPage';
import {OverviewPage} from './OverviewPage';
import {AuditPage, GrantsPage, TokensPage, UsersPage} from './AdminPages';

type Page = {onClose: (f: () => void) => void; confirmLeave: null | (() => string); signal: AbortSignal};

function mount(el: (args: string[], page: Page) => ReactElement) {
  return (main: HTMLElement, page: Page, args: string[]) => {
    const root = createRoot(main);
    root.render(<StrictMode>{el(args, page)}</StrictMode>);
    page.onClose(() => root.unmount());
  };
}

start([
  [/^\/instances\/(\d+)$/, 'instances', mount(([id]) => <InstancePage id={Number(id)} />)],
  [/^\/edit\/([^/]+)$/, 'workflows', mount(([p], page) => <EditorPage project={p} page={page} />)],
  [/^\/edit\/([^/]+)\/([^/]+)$/, 'workflows', mount(([p, n], page) => <EditorPage project={p} name={n} page={page} />)],
  [/^\/grid\/([^/]+)\/([^/]+)$/, 'workflows', mount(([p, w]) => <GridPage project={p} workflow={w} />)],
  [/^\/overview$/, 'overview', mount(() => <OverviewPage project="" />)],
  [/^\/overview\/([^/]+)$/, 'overview', mount(([p]) => <OverviewPage project={p} />)],
  [/^\/admin\/users$/, 'users', mount(() => <UsersPage />)],
  [/^\/admin\/grants$/, 'grants', mount(() => <GrantsPage />)],
  [/^\/admin\/grants\/([^/]+)$/, 'grants', mount(([p]) => <GrantsPage project={p} />)],
  [/^\/admin\/audit$/, 'audit', mount(() => <AuditPage />)],
  [/^\/tokens$/, 'tokens', mount(() => <TokensPage />)],
]);

createRoot(document.getElementById('usermenu')!).render(<Auth />);

// The browser tests call these pure helpers directly.
(window as any).belugaTest = {toYAML, localInput, rfc3339Local, h, patch};

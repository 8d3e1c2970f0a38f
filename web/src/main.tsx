// Beluga's web UI: a hash router (router.tsx) over one React page per
// route, each a *Page.tsx; shared pieces are ui.tsx, Filters.tsx and
// Params.tsx, the API client api.ts typed by client.ts.
import '@xyflow/react/dist/style.css';
import './app.css';
import './theme.css';
import {createRoot} from 'react-dom/client';
import {start} from './router';
import {toYAML} from './yaml';
import {localInput, rfc3339Local} from './zone';
import {Auth} from './Auth';
import {ZoneSetting} from './ZoneSetting';
import {InstancePage} from './InstancePage';
import {EditorPage} from './EditorPage';
import {TaskInstancesPage} from './TaskInstancesPage';
import {GridPage} from './GridPage';
import {OverviewPage} from './OverviewPage';
import {ThemeButton, applyTheme, initialTheme} from './Theme';
import {AuditPage, GrantsPage, TokensPage, UsersPage} from './AdminPages';
import {ClusterPage} from './ClusterPage';
import {WorkflowsPage} from './WorkflowsPage';
import {WorkflowPage} from './WorkflowPage';
import {InstancesPage} from './InstancesPage';
import {SchedulesPage} from './SchedulesPage';
import {BackfillsPage} from './BackfillsPage';
import {BackfillPage} from './BackfillPage';
import {TaskGroupsPage} from './TaskGroupsPage';
import {DatasourcesPage} from './DatasourcesPage';
import {DatasetPage, DatasetsIndex, DatasetsPage} from './DatasetsPage';
import {AlertChannelsPage} from './AlertChannelsPage';
import {PromotionPage, PromotionsIndex, PromotionsPage} from './PromotionsPage';

// The theme first, so the first page is drawn in it.
applyTheme(initialTheme());

start([
  [/^\/instances\/(\d+)$/, 'instances', ([id], _p, q) => <InstancePage id={Number(id)} task={q.get('task') || ''} />],
  [/^\/task-instances$/, 'tasks', () => <TaskInstancesPage />],
  [/^\/edit\/([^/]+)$/, 'workflows', ([p], page) => <EditorPage project={p} page={page} />],
  [/^\/edit\/([^/]+)\/([^/]+)$/, 'workflows', ([p, n], page, query) => <EditorPage project={p} name={n} page={page} versionsFrom={Number(query.get('versions')) || undefined} />],
  [/^\/grid\/([^/]+)\/([^/]+)$/, 'workflows', ([p, w]) => <GridPage project={p} workflow={w} />],
  [/^\/overview$/, 'overview', () => <OverviewPage project="" />],
  [/^\/overview\/([^/]+)$/, 'overview', ([p]) => <OverviewPage project={p} />],
  [/^\/admin\/users$/, 'users', () => <UsersPage />],
  [/^\/admin\/grants$/, 'grants', () => <GrantsPage />],
  [/^\/admin\/grants\/([^/]+)$/, 'grants', ([p]) => <GrantsPage project={p} />],
  [/^\/admin\/audit$/, 'audit', () => <AuditPage />],
  [/^\/tokens$/, 'tokens', () => <TokensPage />],
  [/^\/cluster$/, 'cluster', () => <ClusterPage />],
  [/^\/instances$/, 'instances', (_, page, query) => <InstancesPage page={page} query={query} />],
  [/^\/schedules$/, 'schedules', (_, _page, query) => <SchedulesPage query={query} />],
  [/^\/backfills$/, 'backfills', (_, _page, query) => <BackfillsPage query={query} />],
  [/^\/backfills\/(\d+)$/, 'backfills', ([id], page) => <BackfillPage id={Number(id)} page={page} />],
  [/^\/workflows$/, 'workflows', () => <WorkflowsPage query={new URLSearchParams()} />],
  [/^\/workflows\/([^/]+)$/, 'workflows', ([p], _page, query) => <WorkflowsPage project={p} query={query} />],
  [/^\/workflows\/([^/]+)\/([^/]+)$/, 'workflows', ([p, n], page, q) => <WorkflowPage project={p} name={n} page={page}
    version={parseInt(q.get('version') || '0', 10) || 0} />],
  [/^\/task-groups$/, 'task-groups', () => <TaskGroupsPage />],
  [/^\/datasets$/, 'datasets', () => <DatasetsIndex />],
  [/^\/datasets\/([^/]+)$/, 'datasets', ([p]) => <DatasetsPage project={p} />],
  [/^\/datasets\/([^/]+)\/([^/]+)$/, 'datasets', ([p, n]) => <DatasetPage project={p} name={n} />],
  [/^\/datasources$/, 'datasources', () => <DatasourcesPage />],
  [/^\/alert-channels$/, 'alert-channels', () => <AlertChannelsPage />],
  [/^\/promotions$/, 'promotions', () => <PromotionsIndex />],
  [/^\/promotions\/([^/]+)$/, 'promotions', ([p]) => <PromotionsPage project={p} />],
  [/^\/promotions\/([^/]+)\/(\d+)$/, 'promotions', ([p, id]) => <PromotionPage project={p} id={Number(id)} />],
]);

createRoot(document.getElementById('theme')!).render(<ThemeButton />);
createRoot(document.getElementById('usermenu')!).render(<Auth />);
createRoot(document.getElementById('zonemenu')!).render(<ZoneSetting />);

// The browser tests call these pure helpers directly.
(window as unknown as {belugaTest: unknown}).belugaTest = {toYAML, localInput, rfc3339Local};

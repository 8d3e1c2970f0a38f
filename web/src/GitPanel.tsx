// A project's Git binding (README, "Workflows in Git"): the project page
// shows where its workflows come from and the last sync (a refused commit
// with its file and reason), with a Sync button; the editor shows whether
// a save is refused (read_only: edit the repository) or committed
// (write_back: with a message).
import {useState} from 'react';
import {api, describe} from './api';
import {Err, Time, enc, useRead} from './ui';

export type GitBinding = {
  project: string; url: string; branch: string; dir: string; mode: '' | 'read_only' | 'write_back';
  sync_interval: number; hook_set: boolean; last_commit: string; last_synced_at?: string;
  last_attempt_commit: string; last_error_file?: string; last_error?: string;
};

// useGitBinding is the project's binding, null while loading or when it
// has none (the GET is a 404 then).
export function useGitBinding(project: string | undefined): [GitBinding | null, () => void] {
  const [b, , reload] = useRead<GitBinding>(project ? `/api/v1/projects/${enc(project)}/git` : null);
  return [b, reload];
}

const short = (c: string) => (c ? c.slice(0, 12) : '(none)');

// where is the repository and branch of a binding, as shown.
export const gitWhere = (b: GitBinding) => `${b.url}${b.branch ? ` (branch ${b.branch})` : ''}`;

export function GitPanel({project}: {project: string}) {
  const [b, reload] = useGitBinding(project);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState('');
  const [note, setNote] = useState('');
  if (!b) return null;
  async function sync() {
    setBusy(true); setErr(''); setNote('');
    try {
      const r = await api('POST', `/api/v1/projects/${enc(project)}/git/sync`);
      const changed = (r.workflows || []).filter((w: any) => w.created || w.deleted).length;
      setNote(`Synced commit ${short(r.commit)}: ${changed} workflow(s) changed.`);
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); reload(); }
  }
  const refused = !!b.last_error;
  return (
    <section className="panel git" id="git-panel">
      <h2>Git</h2>
      <p>Workflows from <code>{gitWhere(b)}</code>{b.dir ? <>, directory <code>{b.dir}</code></> : null}.{' '}
        {b.mode === 'read_only' ? 'Read-only outside Git: edit the repository.'
          : b.mode === 'write_back' ? 'Saves here are committed to the branch.' : 'Edits here are not written to the repository.'}
        {b.sync_interval ? ` Synced every ${b.sync_interval} min.` : ''}</p>
      <p id="git-last">Last applied commit <code>{short(b.last_commit)}</code>
        {b.last_synced_at ? <>; last sync <Time iso={b.last_synced_at} /></> : '; never synced'}
        {refused ? null : b.last_synced_at ? ': applied.' : '.'}</p>
      {refused ? <p className="apierror" id="git-refused" role="alert">Commit <code>{short(b.last_attempt_commit)}</code> was refused, nothing
        changed{b.last_error_file ? <>: <code>{b.last_error_file}</code></> : null}: {b.last_error}</p> : null}
      <button type="button" id="git-sync" onClick={sync} disabled={busy}>{busy ? 'Syncing…' : 'Sync now'}</button>
      {note ? <span className="muted" id="git-note"> {note}</span> : null}
      <Err text={err} />
    </section>
  );
}

// Messages under the nav (flash), navigation with a message for the next
// page (go), and the modal dialogs that ask before a change. They live
// outside any page's React tree: a message outlives the page that said it.

let pending: [string, string][] = [];

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, string> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
}

// go navigates to a hash route, re-rendering when it is the current one;
// a message given is shown on the new page.
export function go(hash: string, message?: string, kind = 'ok'): void {
  if (message) pending.push([message, kind]);
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

const flashes = new Map<string, HTMLElement>();

// flash shows a message under the nav. Errors stay until dismissed (or the
// same key is cleared); others fade after a few seconds. A key replaces an
// earlier message with the same key, so a failing poll shows one line.
export function flash(message: string, kind = 'error', key: string | null = null): HTMLElement {
  const box = document.getElementById('flash')!;
  if (key && flashes.has(key)) flashes.get(key)!.remove();
  const close = el('button', {type: 'button', class: 'close', title: 'Dismiss'}, '×');
  const div = el('div', {class: `flash ${kind}`, role: kind === 'error' ? 'alert' : 'status'}, el('span', {class: 'msg'}, message), close);
  const drop = () => {
    div.remove();
    if (key && flashes.get(key) === div) flashes.delete(key);
  };
  close.addEventListener('click', drop);
  if (key) flashes.set(key, div);
  box.append(div);
  if (kind !== 'error') setTimeout(drop, 6000);
  return div;
}

export function unflash(key: string): void {
  const e = flashes.get(key);
  if (e) {
    e.remove();
    flashes.delete(key);
  }
}

// clearFlashes drops every message on navigation, and shows the ones
// passed to go.
export function clearFlashes(): void {
  document.getElementById('flash')?.replaceChildren();
  flashes.clear();
  for (const [message, kind] of pending) flash(message, kind);
  pending = [];
}

function dialog(title: string, body: Node, okLabel: string, danger: boolean): Promise<HTMLFormElement | null> {
  return new Promise((resolve) => {
    const dlg = el('dialog', {class: 'dialog'});
    const cancel = el('button', {type: 'button', class: 'cancel'}, 'Cancel');
    cancel.addEventListener('click', () => dlg.close('cancel'));
    const form = el('form', {method: 'dialog'}, el('h3', {}, title), body,
      el('div', {class: 'buttons'}, cancel, el('button', {type: 'submit', value: 'ok', class: 'ok ' + (danger ? 'danger' : 'primary')}, okLabel)));
    dlg.append(form);
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok' ? form : null);
    });
    document.body.append(dlg);
    dlg.showModal();
    ((form.querySelector('input, select, textarea') || form.querySelector('button.ok')) as HTMLElement).focus();
  });
}

// confirmDialog asks before a change; resolves true when confirmed.
export async function confirmDialog(title: string, text: string, okLabel = 'Confirm', danger = true): Promise<boolean> {
  return (await dialog(title, el('p', {}, text), okLabel, danger)) !== null;
}

export type DialogField = {name: string; label: string; type?: string; value?: string | number; min?: number; max?: number; required?: boolean};

// formDialog asks for a few values.
export async function formDialog(title: string, fields: DialogField[], okLabel = 'Save'): Promise<Record<string, string> | null> {
  const body = el('div', {class: 'fields'}, ...fields.map((f) => {
    const input = el('input', {name: f.name, type: f.type || 'text'});
    input.value = String(f.value ?? '');
    if (f.min !== undefined) input.min = String(f.min);
    if (f.max !== undefined) input.max = String(f.max);
    input.required = !!f.required;
    return el('label', {}, el('span', {}, f.label), input);
  }));
  const form = await dialog(title, body, okLabel, false);
  if (!form) return null;
  const out: Record<string, string> = {};
  for (const f of fields) out[f.name] = (form.elements.namedItem(f.name) as HTMLInputElement).value;
  return out;
}

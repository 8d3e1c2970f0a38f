// The REST API client: same origin, JSON in and out. Every 4xx/5xx becomes
// an ApiError carrying the API's own error.message, so callers can show it.

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

let current = '';

// user is the logged-in user's name. The API records the authenticated user
// with actions and schedule changes whatever "by" says; the UI still sends it.
export function user() {
  return current || 'ui';
}

export function setUser(name) {
  current = name || '';
}

async function errorOf(resp) {
  const text = await resp.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    if (body && body.error && typeof body.error.message === 'string') {
      return new ApiError(resp.status, body.error.code || '', body.error.message, body.error.request_id || '');
    }
  } catch { /* not the API's JSON: a proxy or a crash; show what came */ }
  const snippet = text.trim().slice(0, 300);
  return new ApiError(resp.status, '', `HTTP ${resp.status} ${resp.statusText}${snippet ? ': ' + snippet : ''}`, '');
}

async function send(method, path, {json, body, contentType, signal} = {}) {
  const init = {method, headers: {Accept: 'application/json'}, signal, cache: 'no-store'};
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers['Content-Type'] = 'application/json';
  } else if (body !== undefined) {
    init.body = body;
    init.headers['Content-Type'] = contentType;
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', `cannot reach the Beluga API: ${e.message}`, '');
  }
  if (!resp.ok) {
    const err = await errorOf(resp);
    // A session that ended (expired, revoked, logged out elsewhere): back
    // to the login page.
    if (resp.status === 401 && path !== '/api/v1/login') window.dispatchEvent(new CustomEvent('beluga:unauthorized'));
    throw err;
  }
  return resp;
}

// api sends a request and returns the decoded JSON body (null for 204).
export async function api(method, path, opts) {
  const resp = await send(method, path, opts);
  if (resp.status === 204) return null;
  const text = await resp.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(resp.status, '', `the API answered ${method} ${path} with something that is not JSON`, '');
  }
}

export const get = (path, opts) => api('GET', path, opts);

// readLog fetches one page of a task's log: the raw bytes and the offset to
// ask for next.
export async function readLog(id, offset, limit, signal) {
  const resp = await send('GET', `/api/v1/task-instances/${id}/log?offset=${offset}&limit=${limit}`, {signal});
  const bytes = new Uint8Array(await resp.arrayBuffer());
  const next = Number(resp.headers.get('X-Next-Offset'));
  return {bytes, next: Number.isFinite(next) ? next : offset + bytes.length};
}

// isAbort tells a cancelled request (navigation) from a failure.
export function isAbort(e) {
  return e && e.name === 'AbortError';
}

export function describe(e) {
  if (e instanceof ApiError) return e.status ? `${e.message} (HTTP ${e.status})` : e.message;
  return String(e && e.message ? e.message : e);
}

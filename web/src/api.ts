// The REST API client: same origin, JSON in and out. Every 4xx/5xx becomes
// an ApiError carrying the API's own error.message, so callers can show it.
// client.ts types the routes on top of this.

export class ApiError extends Error {
  status: number;
  code: string;
  requestId: string;
  constructor(status: number, code: string, message: string, requestId: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

const USER_KEY = 'beluga.user';

// user is the name recorded with actions and schedule changes.
export function user(): string {
  return localStorage.getItem(USER_KEY) || 'ui';
}

export function setUser(name: string): void {
  if (name) localStorage.setItem(USER_KEY, name);
  else localStorage.removeItem(USER_KEY);
}

export type Opts = {json?: unknown; body?: BodyInit; contentType?: string; signal?: AbortSignal};

async function errorOf(resp: Response): Promise<ApiError> {
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

async function send(method: string, path: string, {json, body, contentType, signal}: Opts = {}): Promise<Response> {
  const headers: Record<string, string> = {Accept: 'application/json'};
  const init: RequestInit = {method, headers, signal, cache: 'no-store'};
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    headers['Content-Type'] = 'application/json';
  } else if (body !== undefined) {
    init.body = body;
    if (contentType) headers['Content-Type'] = contentType;
  }
  let resp: Response;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, 'network', `cannot reach the Beluga API: ${(e as Error).message}`, '');
  }
  if (resp.status === 401 && !path.startsWith('/api/v1/login')) {
    // Not logged in (or the session ended): the app shows its login form.
    window.dispatchEvent(new CustomEvent('beluga:unauthorized'));
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}

// api sends a request and returns the decoded JSON body (null for 204).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function api(method: string, path: string, opts?: Opts): Promise<any> {
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const get = (path: string, opts?: Opts): Promise<any> => api('GET', path, opts);

// readLog fetches one page of a task's log: the raw bytes and the offset to
// ask for next.
export async function readLog(id: number, offset: number, limit: number, signal?: AbortSignal): Promise<{bytes: Uint8Array; next: number}> {
  const resp = await send('GET', `/api/v1/task-instances/${id}/log?offset=${offset}&limit=${limit}`, {signal});
  const bytes = new Uint8Array(await resp.arrayBuffer());
  const next = Number(resp.headers.get('X-Next-Offset'));
  return {bytes, next: Number.isFinite(next) ? next : offset + bytes.length};
}

// isAbort tells a cancelled request (navigation) from a failure.
export function isAbort(e: unknown): boolean {
  return !!e && (e as Error).name === 'AbortError';
}

export function describe(e: unknown): string {
  if (e instanceof ApiError) return e.status ? `${e.message} (HTTP ${e.status})` : e.message;
  const m = e && (e as Error).message;
  return String(m ? m : e);
}

// A small client for the Keepsake server's JSON API. The token (token mode only) is kept in
// localStorage so a reload stays signed in.

const tokenKey = 'keepsake.token';

export function storedToken() {
  return localStorage.getItem(tokenKey);
}

export function storeToken(token) {
  if (token) localStorage.setItem(tokenKey, token);
  else localStorage.removeItem(tokenKey);
}

export function authHeaders() {
  const token = storedToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/**
 * The reply to a request sent with a token the page no longer holds: the user signed out (or
 * signed in with another token) while it was on its way. It is the previous user's, so none
 * of it may reach the screen; the caller drops it (`showError` ignores it).
 */
export class StaleReplyError extends Error {
  constructor(path) {
    super(`The reply to ${path} came after a sign-out and was dropped.`);
    this.name = 'StaleReplyError';
  }
}

export async function api(path, { method = 'GET', body, headers: extraHeaders = {} } = {}) {
  const token = storedToken();
  const headers = { accept: 'application/json', ...authHeaders(), ...extraHeaders };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`/api${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = response.status === 204 ? null : await response.json().catch(() => null);
  // Checked last, after every wait: the caller goes on at once (no event can come between),
  // so what it shows is the signed-in user's.
  if (storedToken() !== token) throw new StaleReplyError(path);
  if (response.status === 204) return null;
  if (!response.ok) {
    throw new ApiError(
      response.status,
      data?.error?.code ?? 'http_error',
      data?.error?.message ?? `${response.status} ${response.statusText}`,
    );
  }
  return data;
}

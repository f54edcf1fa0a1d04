// The one way the studio talks to Django: JSON over fetch, the session cookie, and the
// CSRF token on every write. Errors become ApiError with the server's plain sentence.

/** One problem the server named: a field of the request, or a line of an uploaded file. */
export interface FieldError {
  field?: string;
  line?: number;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly errors: FieldError[];
  /** The request's field that a refusal (a 422) names, as `pairs` or `pairs.0.primitive`. */
  readonly field: string | undefined;

  constructor(status: number, detail: string, errors: FieldError[] = [], field?: string) {
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
    this.field = field;
  }
}

/**
 * What a 422 says about each field of a form, by the field's top-level name (`pairs.0.primitive`
 * is `pairs`): the message of each error the body lists, else its `detail` under its `field`.
 */
export function fieldErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError) || error.status !== 422) return {};
  const byField: Record<string, string> = {};
  const top = (field: string) => field.split(".")[0];
  for (const each of error.errors) if (each.field) byField[top(each.field)] ??= each.message;
  if (error.field) byField[top(error.field)] ??= error.message;
  return byField;
}

/**
 * Whether asking again may succeed: a dropped connection or a busy or restarting server
 * (0 or 5xx) may heal; a 4xx will not change.
 */
export function mayHeal(error: unknown): boolean {
  return error != null && !(error instanceof ApiError && error.status >= 400 && error.status < 500);
}

export interface Page<T> {
  items: T[];
  count: number;
}

/** A list page with `item` first (an entry of the same id replaced): the list as it stands once `item` was created. */
export function withFirst<T extends { id: number }>(page: Page<T> | undefined, item: T): Page<T> {
  const items = page?.items ?? [];
  const rest = items.filter((entry) => entry.id !== item.id);
  return { items: [item, ...rest], count: (page?.count ?? 0) + (rest.length === items.length ? 1 : 0) };
}

function cookie(name: string): string {
  const match = document.cookie.split("; ").find((part) => part.startsWith(`${name}=`));
  return match ? decodeURIComponent(match.slice(name.length + 1)) : "";
}

let csrfReady: Promise<void> | null = null;

/** Make sure the csrftoken cookie is set (once per page load, and again after login). */
export function ensureCsrf(force = false): Promise<void> {
  if (force || !csrfReady || !cookie("csrftoken")) {
    csrfReady = fetch("/api/auth/csrf", { credentials: "same-origin" }).then(() => undefined);
  }
  return csrfReady;
}

async function errorOf(response: Response): Promise<ApiError> {
  let detail = `${response.status} ${response.statusText || "error"}`;
  let errors: FieldError[] = [];
  let field: string | undefined;
  try {
    const body = (await response.json()) as { detail?: unknown; errors?: unknown; field?: unknown } | null;
    if (typeof body?.detail === "string") detail = body.detail;
    if (Array.isArray(body?.errors)) errors = body.errors as FieldError[];
    if (typeof body?.field === "string") field = body.field;
  } catch {
    // not JSON: keep the status line
  }
  if (response.status >= 500)
    detail = `The server failed (${response.status}). Try again; if it persists, check the server log.`;
  return new ApiError(response.status, detail, errors, field);
}

export interface ApiInit {
  method?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, with its media type (a file upload). */
  text?: { content: string; type: string };
  signal?: AbortSignal;
}

export async function api<T>(path: string, init: ApiInit = {}): Promise<T> {
  const method = init.method ?? "GET";
  const headers: Record<string, string> = { Accept: "application/json" };
  if (method !== "GET") {
    await ensureCsrf();
    headers["X-CSRFToken"] = cookie("csrftoken");
  }
  let body: string | undefined;
  if (init.text !== undefined) {
    headers["Content-Type"] = init.text.type;
    body = init.text.content;
  } else if (init.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(init.body);
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, credentials: "same-origin", body, signal: init.signal });
  } catch (error) {
    if ((error as Error).name === "AbortError") throw error;
    throw new ApiError(0, "The studio's server cannot be reached. Is it running?");
  }
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** The API's largest page. */
export const PAGE_LIMIT = 200;

/**
 * Every item of a paged list, page after page: a list the page shows whole (a pool's
 * endpoints, the users, the checkpoints) never stops silently at the API's page limit.
 */
export async function fetchAll<T>(
  path: string,
  params: Record<string, string | number | boolean | null | undefined> = {},
  signal?: AbortSignal,
): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += PAGE_LIMIT) {
    const page = await api<Page<T>>(`${path}${query({ ...params, limit: PAGE_LIMIT, offset })}`, { signal });
    items.push(...page.items);
    if (page.items.length < PAGE_LIMIT || items.length >= page.count) return items;
  }
}

/** Every item of a paged list (fetchAll), as one page. */
export async function fetchEvery<T>(
  path: string,
  params: Record<string, string | number | boolean | null | undefined> = {},
  signal?: AbortSignal,
): Promise<Page<T>> {
  const items = await fetchAll<T>(path, params, signal);
  return { items, count: items.length };
}

/** A query string from the set values only. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** The ws:// or wss:// URL of a path on this server. */
export function wsUrl(path: string): string {
  const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${window.location.host}${path}`;
}

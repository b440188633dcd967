/**
 * The one way the UI talks to the service: the public HTTP API, with the key kept for this
 * browser tab (sessionStorage), sent as HTTP Basic `api:<key>` like the Weave SDKs.
 */
const KEY_ITEM = "tracehouse.apiKey";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_ITEM),
  set: (key: string): void => sessionStorage.setItem(KEY_ITEM, key),
  clear: (): void => sessionStorage.removeItem(KEY_ITEM),
};

type Listener = () => void;
let unauthorized: Listener = () => undefined;
/** Called on every 401: the app forgets the key and shows the login page. */
export function onUnauthorized(listener: Listener): void {
  unauthorized = listener;
}

function authHeader(key: string): string {
  const bytes = new TextEncoder().encode(`api:${key}`);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `Basic ${btoa(binary)}`;
}

/** The API's `message` (every error body is `{detail, message}`), else the status line. */
async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = JSON.parse(text) as { message?: unknown; detail?: unknown };
    if (typeof body.message === "string") message = body.message;
    else if (typeof body.detail === "string") message = body.detail;
  } catch {
    if (text) message = `${message}: ${text.slice(0, 300)}`;
  }
  return new ApiError(res.status, message);
}

export interface RequestOptions {
  readonly method?: "GET" | "POST" | "PUT" | "DELETE";
  readonly body?: unknown;
  readonly key?: string;
  readonly signal?: AbortSignal;
}

export async function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const key = options.key ?? apiKey.get();
  if (key === null) {
    unauthorized();
    throw new ApiError(401, "not logged in");
  }
  const headers: Record<string, string> = { authorization: authHeader(key) };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
    // The key travels in the header; "omit" also keeps the browser from opening its own
    // login dialog on a 401 (the API answers `WWW-Authenticate: Basic`), which would hang the request.
    credentials: "omit",
  });
  if (res.ok) return res;
  const err = await errorOf(res);
  if (res.status === 401 && options.key === undefined) unauthorized();
  throw err;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await request(path, { signal })).json() as Promise<T>;
}

export async function postJson<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return (await request(path, { body, signal })).json() as Promise<T>;
}

export async function putJson<T>(path: string, body: unknown): Promise<T> {
  return (await request(path, { method: "PUT", body })).json() as Promise<T>;
}

export async function deleteJson<T>(path: string): Promise<T> {
  return (await request(path, { method: "DELETE" })).json() as Promise<T>;
}

/** A JSON-lines answer (`/calls/stream_query`, `/threads/stream_query`), parsed as it streams. */
export async function postLines<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T[]> {
  const res = await request(path, { body, signal });
  const out: T[] = [];
  const reader = res.body?.getReader();
  if (!reader) return out;
  const decoder = new TextDecoder();
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    const lines = (rest + decoder.decode(value, { stream: !done })).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) out.push(JSON.parse(line) as T);
    if (done) break;
  }
  if (rest.trim()) out.push(JSON.parse(rest) as T);
  return out;
}

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
export const isAbort = (err: unknown): boolean => err instanceof DOMException && err.name === "AbortError";

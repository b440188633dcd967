import { basic, KEY_ACME } from "../support/service.js";

/** A client of one project's `/v2/{entity}/{project}/` routes: each call answers its status and parsed body. */
export function v2Client(baseUrl: string, project: string, key: string = KEY_ACME) {
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}/v2/${project}${path}`, {
      method,
      headers: { authorization: basic(key), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, body: parseBody(text, res.headers.get("content-type") ?? "") };
  };
  /** 200 expected; the parsed body. */
  const ok = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await send(method, path, body);
    if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`);
    return res.body as T;
  };
  return {
    send,
    ok,
    post: <T = Record<string, unknown>>(path: string, body: unknown) => ok<T>("POST", path, body),
    get: <T = Record<string, unknown>>(path: string) => ok<T>("GET", path),
    del: <T = Record<string, unknown>>(path: string) => ok<T>("DELETE", path),
    /** A JSONL list. */
    list: async <T = Record<string, unknown>>(path: string): Promise<T[]> => (await ok<T[]>("GET", path)) ?? [],
  };
}

function parseBody(text: string, type: string): unknown {
  if (text === "") return null;
  if (type.includes("jsonl")) return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as unknown);
  return JSON.parse(text) as unknown;
}

export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

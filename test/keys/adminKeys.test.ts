import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, client, KEY_ACME, KEY_ADMIN, KEY_OTHER, startTestService } from "../support/service.js";
import { START } from "../http/operationRequests.js";
import { until } from "../support/polling.js";

/**
 * Keys made over the API (docs/keys.md): made by an entity's admin, usable at once, listed
 * without their secret, revoked; and seen by another process of the same database within the
 * bound the API promises (5 s), which the test polls for instead of sleeping.
 */
const PROPAGATION_BOUND_MS = 5_000;

interface MadeKey {
  id: string;
  key: string;
  entity: string;
  role: string;
  name: string;
  created_at: string;
}

describe("API keys over the API", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  /** A second process on the same database: it learns of keys only through ClickHouse. */
  let peer: Awaited<ReturnType<typeof startTestService>>;

  beforeAll(async () => {
    service = await startTestService();
    peer = await startTestService({ ROLE: "query", CLICKHOUSE_DATABASE: service.database });
  });
  afterAll(async () => {
    await peer?.stop();
    await service?.stop();
  });

  const request = (url: string, key: string, method: string, path: string, body?: unknown) =>
    fetch(`${url}${path}`, { method, headers: { authorization: basic(key), "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const make = async (body: unknown, key = KEY_ACME): Promise<MadeKey> => {
    const res = await request(service.url, key, "POST", "/admin/keys", body);
    expect(res.status).toBe(200);
    return (await res.json()) as MadeKey;
  };
  const status = async (url: string, key: string, method: string, path: string, body?: unknown) => {
    const res = await request(url, key, method, path, body);
    await res.arrayBuffer();
    return res.status;
  };
  /** Polls `url` with `key` until `/auth/me` answers `expected`, failing past the bound. */
  const untilMeAnswers = async (url: string, key: string, expected: number): Promise<void> => {
    await until(async () => (await status(url, key, "GET", "/auth/me")) === expected, { timeoutMs: PROPAGATION_BOUND_MS, everyMs: 100, what: `${url} to answer ${expected} to /auth/me` });
  };

  it("makes a key that works at once with its role, lists it without the secret, and refuses it once revoked", async () => {
    const made = await make({ entity: "acme", role: "writer", name: " ci pipeline " });
    expect(made).toMatchObject({ entity: "acme", role: "writer", name: "ci pipeline" });
    expect(made.key.length).toBeGreaterThanOrEqual(32);
    expect(made.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    const me = await (await request(service.url, made.key, "GET", "/auth/me")).json();
    expect(me).toEqual({ username: "ci pipeline", roles: { acme: "writer" }, all_entities: null });
    expect(await status(service.url, made.key, "POST", "/call/start", { start: { ...START, project_id: "acme/keys" } })).toBe(200);
    expect(await status(service.url, made.key, "POST", "/calls/delete", { project_id: "acme/keys", call_ids: ["c1"] })).toBe(403);
    expect(await status(service.url, made.key, "POST", "/calls/stream_query", { project_id: "other/keys" })).toBe(403);
    expect(await status(service.url, made.key, "GET", "/admin/keys?entity=acme")).toBe(403);

    const listed = await request(service.url, KEY_ACME, "GET", "/admin/keys?entity=acme");
    const text = await listed.text();
    expect(text).not.toContain(made.key);
    const keys = (JSON.parse(text) as { keys: Record<string, unknown>[] }).keys;
    const entry = keys.find((k) => k.id === made.id)!;
    expect(Object.keys(entry).sort()).toEqual(["created_at", "entity", "id", "last_used_at", "name", "role"]);
    expect(entry).toMatchObject({ name: "ci pipeline", entity: "acme", role: "writer", created_at: made.created_at });
    expect(entry.last_used_at).toEqual(expect.stringMatching(/^\d{4}-/));

    expect(await (await request(service.url, KEY_ACME, "DELETE", `/admin/keys/${made.id}`)).json()).toEqual({});
    expect(await status(service.url, made.key, "GET", "/auth/me")).toBe(401);
    expect(await status(service.url, KEY_ACME, "DELETE", `/admin/keys/${made.id}`)).toBe(404);
    const after = (await (await request(service.url, KEY_ACME, "GET", "/admin/keys?entity=acme")).json()) as { keys: { id: string }[] };
    expect(after.keys.map((k) => k.id)).not.toContain(made.id);
  });

  it("another process accepts a new key and refuses a revoked one within the bound, and records its uses, through ClickHouse", async () => {
    const before = await make({ entity: "acme", role: "viewer", name: "made before" });
    // Loaded when a process starts.
    const late = await startTestService({ ROLE: "query", CLICKHOUSE_DATABASE: service.database });
    try {
      expect(await status(late.url, before.key, "GET", "/auth/me")).toBe(200);
    } finally {
      await late.stop();
    }
    // The use was seen only by the process that stopped: it wrote it to ClickHouse when it stopped.
    const listed = (await (await request(service.url, KEY_ACME, "GET", "/admin/keys?entity=acme")).json()) as { keys: { id: string; last_used_at: string | null }[] };
    expect(listed.keys.find((k) => k.id === before.id)!.last_used_at).toEqual(expect.stringMatching(/^\d{4}-/));
    const made = await make({ entity: "acme", role: "viewer", name: "dashboard" });
    await untilMeAnswers(peer.url, made.key, 200);
    expect(await status(peer.url, made.key, "POST", "/calls/stream_query", { project_id: "acme/keys" })).toBe(200);
    expect(await status(peer.url, made.key, "POST", "/feedback/create", { project_id: "acme/keys", weave_ref: "weave:///acme/keys/call/c1", feedback_type: "custom", payload: {} })).toBe(403);
    expect(await status(service.url, KEY_ACME, "DELETE", `/admin/keys/${made.id}`)).toBe(200);
    await untilMeAnswers(peer.url, made.key, 401);
  });

  it("refuses bad input with the validation detail, and changes nothing", async () => {
    const listed = async () => ((await (await request(service.url, KEY_ACME, "GET", "/admin/keys?entity=acme")).json()) as { keys: unknown[] }).keys.length;
    const count = await listed();
    const refusals: [unknown, string[]][] = [
      [{ entity: "acme", role: "owner", name: "x" }, ["body", "role"]],
      [{ entity: "acme", role: "viewer", name: "  " }, ["body", "name"]],
      [{ entity: "*", role: "viewer", name: "x" }, ["body", "entity"]],
      [{ entity: "acme/p", role: "viewer", name: "x" }, ["body", "entity"]],
      [{ role: "viewer", name: "x" }, ["body", "entity"]],
    ];
    for (const [body, loc] of refusals) {
      const res = await request(service.url, KEY_ACME, "POST", "/admin/keys", body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      const detail = ((await res.json()) as { detail: { loc: string[] }[] }).detail;
      expect(detail.map((d) => d.loc)).toContainEqual(loc);
    }
    expect(await status(service.url, KEY_ACME, "GET", "/admin/keys")).toBe(422);
    expect(await listed()).toBe(count);
  });

  it("keeps every entity's keys to its own admins", async () => {
    const made = await make({ entity: "acme", role: "admin", name: "acme admin" });
    // Another entity's admin: neither makes, lists nor revokes acme's keys.
    expect(await status(service.url, KEY_OTHER, "POST", "/admin/keys", { entity: "acme", role: "viewer", name: "x" })).toBe(403);
    expect(await status(service.url, KEY_OTHER, "GET", "/admin/keys?entity=acme")).toBe(403);
    expect(await status(service.url, KEY_OTHER, "DELETE", `/admin/keys/${made.id}`)).toBe(403);
    // A key made over the API reaches only its entity, even as admin.
    expect(await status(service.url, made.key, "POST", "/admin/keys", { entity: "other", role: "viewer", name: "x" })).toBe(403);
    expect(await status(service.url, made.key, "POST", "/calls/stream_query", { project_id: "other/p" })).toBe(403);
    // An admin made over the API makes and revokes keys of its entity.
    const viewer = await make({ entity: "acme", role: "viewer", name: "made by an API admin" }, made.key);
    expect(await status(service.url, made.key, "DELETE", `/admin/keys/${viewer.id}`)).toBe(200);
    expect(await status(service.url, made.key, "GET", "/auth/me")).toBe(200);
  });

  it("tells a configured key its roles: its entities, or every entity for a `*` key", async () => {
    expect(await (await client(service.url, KEY_ACME).get("/auth/me")).json()).toEqual({ username: "alice", roles: { acme: "admin" }, all_entities: null });
    expect(await (await client(service.url, KEY_ADMIN).get("/auth/me")).json()).toEqual({ username: "root", roles: {}, all_entities: "admin" });
    expect(await status(service.url, "not-a-key-0123456789", "GET", "/auth/me")).toBe(401);
  });
});

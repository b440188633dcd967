import type { Server } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyRing } from "../../services/auth/keys.js";
import { openApiDocument } from "../../services/contract/openapi.js";
import { BODY_PROJECT, operation, PUBLIC, type Operation } from "../../services/contract/operation.js";
import { z } from "../../services/contract/zod.js";
import { HttpApi } from "../../services/http/app.js";
import { basic, KEY_ACME, KEY_OTHER } from "../support/service.js";

/**
 * The HTTP layer over real HTTP: an operation's path parameters, query string and JSON body
 * are each validated (422 with `loc` at the part and field), DELETE may carry a JSON body,
 * and a project named in the path is scoped like one in the body.
 */
const Digest = z.string().regex(/^[A-Za-z0-9]{4,64}$/, "must be a digest");

const tagsOp = operation({
  id: "test_tags_add",
  method: "put",
  path: "/objs/{object_id}/versions/{digest}/tags",
  summary: "test",
  tag: "Test",
  params: z.object({ object_id: z.string().min(1), digest: Digest }),
  body: z.object({ project_id: z.string(), tags: z.array(z.string().min(1)) }),
  response: z.object({}).passthrough(),
  role: "writer",
  scope: BODY_PROJECT,
});

const deleteOp = operation({
  id: "test_delete_with_body",
  method: "delete",
  path: "/v2/{entity}/{project}/things/{thing_id}",
  summary: "test",
  tag: "Test",
  params: z.object({ entity: z.string().min(1), project: z.string().min(1), thing_id: z.string().regex(/^\d+$/, "must be digits") }),
  body: z.object({ steps: z.array(z.number().int()).min(1) }),
  response: z.object({}).passthrough(),
  role: "admin",
  scope: { kind: "projects", of: ({ params }) => [`${params.entity}/${params.project}`] },
});

const listOp = operation({
  id: "test_list",
  method: "get",
  path: "/things",
  summary: "test",
  tag: "Test",
  query: z.object({ project_id: z.string(), limit: z.coerce.number().int().min(1).max(100) }),
  response: z.object({}).passthrough(),
  role: "viewer",
  scope: { kind: "projects", of: ({ query }) => [query.project_id] },
});

const keptTextOp = operation({
  id: "test_kept_text",
  method: "post",
  path: "/kept",
  summary: "test",
  tag: "Test",
  body: z.object({ project_id: z.string(), val: z.unknown() }),
  keepBodyText: true,
  response: z.object({}).passthrough(),
  role: "writer",
  scope: BODY_PROJECT,
});

const plainOp = { ...keptTextOp, id: "test_plain_text", path: "/plain", keepBodyText: undefined };

describe("operation parts over HTTP", () => {
  let server: Server;
  let url: string;
  let api: HttpApi;

  beforeAll(async () => {
    api = new HttpApi({ keys: new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }, { key: KEY_OTHER, username: "bob", entities: ["other"] }]), log: pino({ level: "silent" }), maxBodyBytes: 1024 * 1024 });
    api.mount(tagsOp, async ({ params, body }) => ({ params, body }));
    api.mount(deleteOp, async ({ params, body }, ctx) => ({ params, body, projects: ctx.projects }));
    api.mount(listOp, async ({ query }) => ({ query }));
    api.mount(keptTextOp, async ({ body }, ctx) => ({ text: ctx.bodyText ?? null, val: body.val }));
    api.mount(plainOp, async (_input, ctx) => ({ text: ctx.bodyText ?? null }));
    server = await api.listen(0, "127.0.0.1");
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  });
  afterAll(async () => {
    await new Promise((done) => server.close(done));
  });

  const call = async (method: string, path: string, body?: unknown, key = KEY_ACME) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: basic(key), "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it("hands the handler typed path parameters and body", async () => {
    expect(await call("PUT", "/objs/my%2Fobj/versions/abc123/tags", { project_id: "acme/p", tags: ["gold"] })).toEqual({
      status: 200,
      body: { params: { object_id: "my/obj", digest: "abc123" }, body: { project_id: "acme/p", tags: ["gold"] } },
    });
  });

  it("validates a path segment like a body field: 422 with loc at the segment", async () => {
    expect(await call("PUT", "/objs/o/versions/no!/tags", { project_id: "acme/p", tags: [] })).toEqual({
      status: 422,
      body: { detail: [{ loc: ["path", "digest"], msg: "must be a digest", type: "invalid_format" }], message: "path.digest: must be a digest" },
    });
  });

  it("takes a JSON body on DELETE and scopes the project named in the path", async () => {
    expect(await call("DELETE", "/v2/acme/p/things/7", { steps: [1, 2] })).toEqual({
      status: 200,
      body: { params: { entity: "acme", project: "p", thing_id: "7" }, body: { steps: [1, 2] }, projects: ["acme/p"] },
    });
    expect((await call("DELETE", "/v2/acme/p/things/7", { steps: [1] }, KEY_OTHER)).status).toBe(403);
    expect(await call("DELETE", "/v2/acme/p/things/x", { steps: [1] })).toMatchObject({ status: 422, body: { detail: [{ loc: ["path", "thing_id"] }] } });
    expect(await call("DELETE", "/v2/acme/p/things/7", { steps: [] })).toMatchObject({ status: 422, body: { detail: [{ loc: ["body", "steps"] }] } });
  });

  it("validates the query string, with loc at the parameter", async () => {
    expect(await call("GET", "/things?project_id=acme/p&limit=5")).toEqual({ status: 200, body: { query: { project_id: "acme/p", limit: 5 } } });
    expect(await call("GET", "/things?project_id=acme/p&limit=500")).toMatchObject({ status: 422, body: { detail: [{ loc: ["query", "limit"] }] } });
    expect((await call("GET", "/things?project_id=other/p&limit=5")).status).toBe(403);
  });

  it("keeps the body text exactly as sent for an operation that asks (keepBodyText), and only for it", async () => {
    const text = '{ "project_id": "acme/p",\n  "val": {"f": 1.0, "big": 123456789012345678901234567890, "s": "\\u00e9 €😀"} }';
    const send = (path: string) =>
      fetch(`${url}${path}`, { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "application/json" }, body: text });
    const kept = await send("/kept");
    expect(kept.status).toBe(200);
    const answer = (await kept.json()) as { text: string; val: Record<string, unknown> };
    expect(answer.text).toBe(text);
    expect(answer.val).toEqual({ f: 1, big: 1.2345678901234568e29, s: "é €😀" });
    const plain = await send("/plain");
    expect(await plain.json()).toEqual({ text: null });
  });

  it("refuses to mount an operation that declares no scope", () => {
    const unscoped = { ...listOp, id: "test_unscoped", path: "/unscoped", scope: undefined } as unknown as typeof listOp;
    expect(() => api.mount(unscoped, async () => ({}))).toThrow(/declares no scope/);
  });

  it("refuses to mount an operation that declares no role, or a role that does not fit its scope", () => {
    const roleless = { ...listOp, id: "test_roleless", path: "/roleless", role: undefined } as unknown as typeof listOp;
    expect(() => api.mount(roleless, async () => ({}))).toThrow(/declares no role/);
    const keylessWithRole = { ...listOp, id: "test_public_viewer", path: "/public_viewer", scope: PUBLIC };
    expect(() => api.mount(keylessWithRole, async () => ({}))).toThrow(/only public operations/);
    const scopedWithoutRole = { ...listOp, id: "test_scoped_null", path: "/scoped_null", role: null };
    expect(() => api.mount(scopedWithoutRole, async () => ({}))).toThrow(/only public operations/);
  });

  it("documents path and query parameters in the OpenAPI document", () => {
    const doc = openApiDocument([tagsOp, deleteOp, listOp] as unknown as Operation[], "test") as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    };
    const names = (path: string, method: string) => doc.paths[path]![method]!.parameters!.map((p) => `${p.in}:${p.name}`).sort();
    expect(names("/objs/{object_id}/versions/{digest}/tags", "put")).toEqual(["path:digest", "path:object_id"]);
    expect(names("/v2/{entity}/{project}/things/{thing_id}", "delete")).toEqual(["path:entity", "path:project", "path:thing_id"]);
    expect(names("/things", "get")).toEqual(["query:limit", "query:project_id"]);
  });
});

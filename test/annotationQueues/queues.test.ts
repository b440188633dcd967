import { beforeAll, describe, expect, it } from "vitest";
import { serviceForFile } from "../support/service.js";
import { annotationApi, ISO_MICROS, UUIDV7, type Detail, type Queue } from "./support.js";

const service = serviceForFile();
let aq: ReturnType<typeof annotationApi>;
const P = "acme/queues";
const SCORER = `weave:///${P}/object/severity:abc123`;

beforeAll(async () => {
  aq = annotationApi(service.url, P);
});

const readQueue = async (id: string) => {
  const res = await aq.read(id);
  expect(res.status).toBe(200);
  return ((await res.json()) as { queue: Queue }).queue;
};

describe("create and read", () => {
  it("answers {id} (a UUIDv7) and reads back every field, created_by the key's user", async () => {
    const res = await aq.api.post("/annotation_queues", { project_id: P, name: "Errors", description: "calls that failed", scorer_refs: [SCORER], wb_user_id: "spoofed" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: string };
    expect(Object.keys(body)).toEqual(["id"]);
    expect(body.id).toMatch(UUIDV7);
    const queue = await readQueue(body.id);
    expect(queue).toEqual({
      id: body.id, project_id: P, name: "Errors", description: "calls that failed", scorer_refs: [SCORER],
      created_at: queue.created_at, created_by: "alice", updated_at: queue.created_at, deleted_at: null,
    });
    expect(queue.created_at).toMatch(ISO_MICROS);
    expect(Math.abs(Date.parse(queue.created_at) - Date.now())).toBeLessThan(60_000);
  });

  it("defaults the description to ''", async () => {
    const id = await aq.create({ name: "No description" });
    expect((await readQueue(id)).description).toBe("");
  });

  it("answers 404 for an unknown queue and for a queue of another project", async () => {
    const id = await aq.create({ name: "Mine" });
    expect((await aq.read("no-such-queue")).status).toBe(404);
    const other = annotationApi(service.url, "acme/elsewhere");
    const res = await other.read(id);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: `Annotation queue ${id} not found`, message: `Annotation queue ${id} not found` });
  });
});

describe("query", () => {
  const project = "acme/queue-query";
  let q: ReturnType<typeof annotationApi>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    q = annotationApi(service.url, project);
    for (const name of ["Beta review", "alpha errors", "Gamma", "ALPHA latency"]) ids[name] = await q.create({ name });
    await annotationApi(service.url, "acme/queue-query-other").create({ name: "alpha elsewhere" });
  });

  it("streams the project's queues as JSON lines, newest first by default", async () => {
    const res = await q.api.post("/annotation_queues/query", { project_id: project });
    expect(res.headers.get("content-type")).toContain("application/jsonl");
    const queues = await q.query();
    expect(queues.map((x) => x.name)).toEqual(["ALPHA latency", "Gamma", "alpha errors", "Beta review"]);
    expect(queues[0]).toEqual({ ...queues[0], project_id: project, deleted_at: null, created_by: "alice" });
  });

  it("filters by a case-insensitive substring of the name", async () => {
    expect((await q.query({ name: "alpha" })).map((x) => x.name).sort()).toEqual(["ALPHA latency", "alpha errors"]);
    expect((await q.query({ name: "VIEW" })).map((x) => x.name)).toEqual(["Beta review"]);
    expect(await q.query({ name: "nothing like it" })).toEqual([]);
  });

  it("sorts by name, created_at and updated_at in both directions", async () => {
    const names = async (field: string, direction: string) => (await q.query({ sort_by: [{ field, direction }] })).map((x) => x.name);
    expect(await names("name", "asc")).toEqual(["ALPHA latency", "Beta review", "Gamma", "alpha errors"]);
    expect(await names("name", "desc")).toEqual(["alpha errors", "Gamma", "Beta review", "ALPHA latency"]);
    expect(await names("created_at", "asc")).toEqual(["Beta review", "alpha errors", "Gamma", "ALPHA latency"]);
    const res = await q.send("PUT", `/annotation_queues/${ids["alpha errors"]}`, { project_id: project, description: "touched" });
    expect(res.status).toBe(200);
    expect((await names("updated_at", "desc"))[0]).toBe("alpha errors");
  });

  it("pages with limit and offset", async () => {
    const all = (await q.query({ sort_by: [{ field: "created_at", direction: "asc" }] })).map((x) => x.id);
    expect((await q.query({ sort_by: [{ field: "created_at", direction: "asc" }], limit: 2 })).map((x) => x.id)).toEqual(all.slice(0, 2));
    expect((await q.query({ sort_by: [{ field: "created_at", direction: "asc" }], limit: 2, offset: 2 })).map((x) => x.id)).toEqual(all.slice(2, 4));
    expect((await q.query({ sort_by: [{ field: "created_at", direction: "asc" }], offset: 3 })).map((x) => x.id)).toEqual(all.slice(3));
    expect(await q.query({ limit: 0 })).toEqual([]);
  });
});

describe("update", () => {
  it("changes only the fields given and moves updated_at", async () => {
    const id = await aq.create({ name: "Before", description: "kept", scorer_refs: [SCORER] });
    const before = await readQueue(id);
    const res = await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P, name: "After" });
    expect(res.status).toBe(200);
    const { queue } = (await res.json()) as { queue: Queue };
    expect(queue).toEqual({ ...before, name: "After", updated_at: queue.updated_at });
    expect(queue.updated_at > before.updated_at).toBe(true);
    expect(await readQueue(id)).toEqual(queue);

    const second = (await (await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P, description: "", scorer_refs: [] })).json()) as { queue: Queue };
    expect(second.queue).toEqual({ ...queue, description: "", scorer_refs: [], updated_at: second.queue.updated_at });
    expect(await readQueue(id)).toEqual(second.queue);
  });

  it("with no field given answers the queue unchanged", async () => {
    const id = await aq.create({ name: "Still" });
    const before = await readQueue(id);
    const res = await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P });
    expect(await res.json()).toEqual({ queue: before });
    expect(await readQueue(id)).toEqual(before);
  });

  it("answers 404 for an unknown or deleted queue", async () => {
    expect((await aq.send("PUT", "/annotation_queues/nope", { project_id: P, name: "x" })).status).toBe(404);
    const id = await aq.create({ name: "Gone" });
    await aq.send("DELETE", `/annotation_queues/${id}?project_id=${P}`);
    expect((await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P, name: "x" })).status).toBe(404);
  });
});

describe("soft delete", () => {
  it("answers the queue with deleted_at, then hides it from read, query, update, stats and the item routes", async () => {
    const project = "acme/queue-delete";
    const d = annotationApi(service.url, project);
    const kept = await d.create({ name: "kept" });
    const id = await d.create({ name: "deleted" });
    const before = await (await d.read(id)).json() as { queue: Queue };
    const res = await d.send("DELETE", `/annotation_queues/${id}?project_id=${project}`);
    expect(res.status).toBe(200);
    const { queue } = (await res.json()) as { queue: Queue };
    expect(queue).toEqual({ ...before.queue, deleted_at: queue.deleted_at });
    expect(queue.deleted_at).toMatch(ISO_MICROS);
    expect((await d.read(id)).status).toBe(404);
    expect((await d.query()).map((x) => x.id)).toEqual([kept]);
    expect(await d.stats([id, kept])).toEqual([{ queue_id: kept, total_items: 0, completed_items: 0 }]);
    expect((await d.api.post(`/annotation_queues/${id}/items`, { project_id: project, call_ids: ["c"], display_fields: [] })).status).toBe(404);
    expect((await d.api.post(`/annotation_queues/${id}/items/query`, { project_id: project })).status).toBe(404);
    expect((await d.progress(id, "i", "completed")).status).toBe(404);
    expect((await d.send("DELETE", `/annotation_queues/${id}?project_id=${project}`)).status).toBe(404);
  });
});

describe("bad input", () => {
  const refuse = async (res: Response, loc: (string | number)[]) => {
    expect(res.status).toBe(422);
    const body = (await res.json()) as Detail;
    expect(body.detail.map((d) => d.loc)).toContainEqual(loc);
    expect(typeof body.message).toBe("string");
  };

  it("refuses bad queue bodies with 422 on the field, and writes nothing", async () => {
    const project = "acme/queue-bad";
    const b = annotationApi(service.url, project);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, scorer_refs: [] }), ["body", "name"]);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, name: "", scorer_refs: [] }), ["body", "name"]);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, name: "   ", scorer_refs: [] }), ["body", "name"]);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, name: "x" }), ["body", "scorer_refs"]);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, name: "x", scorer_refs: ["not a ref"] }), ["body", "scorer_refs", 0]);
    await refuse(await b.api.post("/annotation_queues", { project_id: "no-slash", name: "x", scorer_refs: [] }), ["body", "project_id"]);
    await refuse(await b.api.post("/annotation_queues", { project_id: project, name: "x", scorer_refs: [], description: 5 }), ["body", "description"]);
    expect(await b.query()).toEqual([]);
  });

  it("refuses bad queries, updates, stats and reads with 422", async () => {
    const id = await aq.create({ name: "Valid" });
    await refuse(await aq.api.post("/annotation_queues/query", { project_id: P, sort_by: [{ field: "description", direction: "asc" }] }), ["body", "sort_by", 0, "field"]);
    await refuse(await aq.api.post("/annotation_queues/query", { project_id: P, sort_by: [{ field: "name", direction: "up" }] }), ["body", "sort_by", 0, "direction"]);
    await refuse(await aq.api.post("/annotation_queues/query", { project_id: P, limit: -1 }), ["body", "limit"]);
    await refuse(await aq.api.post("/annotation_queues/query", { project_id: P, offset: 1.5 }), ["body", "offset"]);
    await refuse(await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P, name: "" }), ["body", "name"]);
    await refuse(await aq.send("PUT", `/annotation_queues/${id}`, { project_id: P, scorer_refs: ["weave:///x"] }), ["body", "scorer_refs", 0]);
    await refuse(await aq.api.post("/annotation_queues/stats", { project_id: P }), ["body", "queue_ids"]);
    await refuse(await aq.api.get(`/annotation_queues/${id}`), ["query", "project_id"]);
    await refuse(await aq.send("DELETE", `/annotation_queues/${id}`), ["query", "project_id"]);
    expect((await readQueue(id)).name).toBe("Valid");
  });
});

describe("OpenAPI", () => {
  it("documents the nine operations under their paths and methods", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const methods = (path: string) => Object.keys(doc.paths[path] ?? {}).sort();
    expect(methods("/annotation_queues")).toEqual(["post"]);
    expect(methods("/annotation_queues/query")).toEqual(["post"]);
    expect(methods("/annotation_queues/stats")).toEqual(["post"]);
    expect(methods("/annotation_queues/{queue_id}")).toEqual(["delete", "get", "put"]);
    expect(methods("/annotation_queues/{queue_id}/items")).toEqual(["post"]);
    expect(methods("/annotation_queues/{queue_id}/items/query")).toEqual(["post"]);
    expect(methods("/annotation_queues/{queue_id}/items/{item_id}/progress")).toEqual(["post"]);
  });
});

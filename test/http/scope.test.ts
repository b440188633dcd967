import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowDigest, tableDigest } from "../../services/digests.js";
import { parseLossless } from "../../services/losslessJson.js";
import { baseModels, baseModelWeights } from "../../services/lm/index.js";
import { basic, client, KEY_ACME, KEY_ADMIN, KEY_OTHER, startTestService, waitStored } from "../support/service.js";
import { formOf, KEY_ONLY, KEY_ONLY_BODIES, LOOKED_UP, makeLookedUp, PROJECT, PROJECT_REQUESTS, PUBLIC, START, STREAMED, type LookedUp } from "./operationRequests.js";

/**
 * Every mounted operation is scoped: a key of another entity gets 403 for each one that
 * touches a project, and nothing is written. The table in operationRequests.ts must name every
 * mounted operation: a new operation without a row fails this test until it has one.
 */

describe("operation scopes", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;

  let made: LookedUp;
  let weightsBytes = 0;
  const filled = (text: string) => made.fill(text);

  beforeAll(async () => {
    service = await startTestService();
    made = await makeLookedUp(service.url, KEY_ADMIN, "m1");
    weightsBytes = (await baseModelWeights(baseModels()[0]!.id))!.length;
  });
  afterAll(async () => {
    await service.stop();
  });

  it("every mounted operation declares a scope this test covers", () => {
    const ids = service.operations.map((op) => op.id).sort();
    expect(ids).toEqual([...Object.keys(PROJECT_REQUESTS), ...KEY_ONLY, ...PUBLIC].sort());
    for (const op of service.operations) {
      const expected = PUBLIC.includes(op.id) ? "public" : KEY_ONLY.includes(op.id) ? "key" : STREAMED.includes(op.id) ? "streamedProject" : LOOKED_UP.includes(op.id) ? "lookedUpProject" : "projects";
      expect({ id: op.id, scope: op.scope.kind }).toEqual({ id: op.id, scope: expected });
    }
  });

  it("answers 403 to another entity's key for every operation that touches a project, and writes nothing", async () => {
    for (const op of service.operations.filter((o) => o.scope.kind !== "public" && o.scope.kind !== "key")) {
      const request = PROJECT_REQUESTS[op.id]!;
      const res = await fetch(`${service.url}${filled(request.path ?? op.path)}`, {
        method: op.method.toUpperCase(),
        headers: { authorization: basic(KEY_OTHER), ...(request.form ? {} : { "content-type": "application/json" }), ...request.headers },
        body: request.form ? formOf(request.form) : request.body === undefined ? undefined : filled(JSON.stringify(request.body)),
      });
      await res.arrayBuffer();
      expect({ op: op.id, status: res.status }).toEqual({ op: op.id, status: 403 });
    }
    const admin = client(service.url, KEY_ADMIN);
    expect(await admin.lines("/calls/stream_query", { project_id: PROJECT })).toEqual([]);
    expect(await admin.json("/feedback/query", { project_id: PROJECT })).toEqual({ result: [] });
    const prices = await admin.json<{ results: { llm_id: string }[] }>("/cost/query", { project_id: PROJECT });
    expect(prices.results.filter((p) => p.llm_id === "model-x")).toEqual([]);
    expect(await admin.json("/objs/query", { project_id: PROJECT })).toEqual({ objs: [] });
    expect(await (await admin.get(`/tags?project_id=${PROJECT}`)).json()).toEqual({ tags: [] });
    expect(await (await admin.get(`/aliases?project_id=${PROJECT}`)).json()).toEqual({ aliases: [] });
    expect(await admin.lines("/annotation_queues/query", { project_id: PROJECT })).toEqual([]);
    // The only file of PROJECT: the base weights of the training model made in beforeAll.
    expect(await admin.json("/files/query_stats", { project_id: PROJECT })).toEqual({ total_size_bytes: weightsBytes });
    expect(await admin.json("/table/query_stats_batch", { project_id: PROJECT, digests: [tableDigest([rowDigest(parseLossless('{"a": 1}'))])] })).toEqual({ tables: [] });
    const checkpoints = await (await admin.get(`/v1/preview/models/${made.model_id}/checkpoints`)).json();
    expect(checkpoints).toMatchObject({ data: [{ step: 0 }], has_more: false });
    const created = await admin.post("/v1/preview/models", { entity: "acme", project: "scoped", name: "m2", base_model: baseModels()[0]!.id, return_existing: false });
    expect(created.status).toBe(200);
  });

  it("key-only operations answer any valid key and refuse a missing one; public ones need none", async () => {
    for (const op of service.operations.filter((o) => o.scope.kind === "key")) {
      const body = KEY_ONLY_BODIES[op.id];
      const init = body === undefined ? {} : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } };
      const anonymous = await fetch(`${service.url}${op.path}`, init);
      expect({ op: op.id, status: anonymous.status }).toEqual({ op: op.id, status: 401 });
      const other = await fetch(`${service.url}${op.path}`, { ...init, headers: { ...init.headers, authorization: basic(KEY_OTHER) } });
      expect({ op: op.id, status: other.status }).toEqual({ op: op.id, status: 200 });
    }
    const health = await fetch(`${service.url}/health`);
    expect(health.status).toBe(200);
  });

  it("projects_info answers only the projects the key reaches", async () => {
    const res = await client(service.url, KEY_ACME).json("/service/projects_info", { project_ids: [PROJECT, "other/p"] });
    expect(res).toEqual([{ external_project_id: PROJECT, internal_project_id: PROJECT }]);
  });

  it("projects_list answers only the projects of the key's entities", async () => {
    const admin = client(service.url, KEY_ADMIN);
    await admin.json("/call/upsert_batch", { batch: [{ mode: "start", req: { start: { ...START, project_id: "acme/listed" } } }] });
    await admin.json("/call/upsert_batch", { batch: [{ mode: "start", req: { start: { ...START, project_id: "other/hidden" } } }] });
    await waitStored(service.url); // the worker records a project when it stores its calls
    const acme = await (await client(service.url, KEY_ACME).get("/projects")).json();
    // acme/scoped holds no calls, only a file (the training model's weights): listed too.
    expect(acme).toEqual({
      projects: [
        { entity: "acme", name: "listed", project_id: "acme/listed", description: null },
        { entity: "acme", name: "scoped", project_id: "acme/scoped", description: null },
      ],
    });
    const all = (await (await admin.get("/projects")).json()) as { projects: { project_id: string }[] };
    expect(all.projects.map((p) => p.project_id)).toEqual(["acme/listed", "acme/scoped", "other/hidden"]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestService, type Client } from "../support/service.js";

/**
 * `/alerts/create`, `/alerts/query`, `/alerts/delete` on a real service: shapes, the 422s
 * (nothing stored), private webhook hosts refused unless ALERTS_ALLOWED_HOSTS lists them.
 */
const P = "acme/alerts-api";
const HOOK = "https://hooks.example.com/alerts";

let service: Awaited<ReturnType<typeof startTestService>>;
let strict: Awaited<ReturnType<typeof startTestService>>;
let api: Client;
let strictApi: Client;

beforeAll(async () => {
  // A long interval: no evaluation runs while these tests read the rules' state.
  service = await startTestService({ ALERTS_ALLOWED_HOSTS: "127.0.0.1", ALERTS_EVAL_INTERVAL_MS: "30000" });
  strict = await startTestService({ ALERTS_EVAL_INTERVAL_MS: "30000" });
  api = client(service.url);
  strictApi = client(strict.url);
});
afterAll(async () => {
  await service?.stop();
  await strict?.stop();
});

const rule = (over: Record<string, unknown> = {}) => ({
  project_id: P,
  name: "errors",
  metric: "error_rate",
  window_minutes: 5,
  comparison: "gt",
  threshold: 0.5,
  webhook_url: HOOK,
  ...over,
});

const list = async (project = P, c: Client = api) => (await c.json<{ alerts: Record<string, unknown>[] }>("/alerts/query", { project_id: project })).alerts;

describe("alerts API", () => {
  it("creates, lists and deletes rules", async () => {
    const { id } = await api.json<{ id: string }>("/alerts/create", rule({ op_names: ["my-op"] }));
    const { id: scored } = await api.json<{ id: string }>("/alerts/create", rule({ name: "quality", metric: "score_mean", comparison: "lt", threshold: 0.7, monitor_ref: "weave:///acme/alerts-api/object/mon:abc", scorer: "judge", window_minutes: 60 }));
    expect(typeof id).toBe("string");
    const alerts = await list();
    expect(alerts).toEqual([
      {
        id, name: "errors", metric: "error_rate", window_minutes: 5, comparison: "gt", threshold: 0.5, op_names: ["my-op"],
        monitor_ref: null, scorer: null, webhook_url: HOOK, state: "ok", last_value: null, last_evaluated_at: null, history: [],
      },
      {
        id: scored, name: "quality", metric: "score_mean", window_minutes: 60, comparison: "lt", threshold: 0.7, op_names: null,
        monitor_ref: "weave:///acme/alerts-api/object/mon:abc", scorer: "judge", webhook_url: HOOK, state: "ok", last_value: null, last_evaluated_at: null, history: [],
      },
    ]);
    expect(await api.json("/alerts/delete", { project_id: P, id })).toEqual({});
    expect((await list()).map((a) => a.id)).toEqual([scored]);
    const again = await api.post("/alerts/delete", { project_id: P, id });
    expect(again.status).toBe(404);
    // Another project does not see or delete the rule.
    expect(await list("acme/alerts-other")).toEqual([]);
    expect((await api.post("/alerts/delete", { project_id: "acme/alerts-other", id: scored })).status).toBe(404);
  });

  it("answers 422 for a bad rule and stores nothing", async () => {
    const project = "acme/alerts-bad";
    const bad = [
      rule({ project_id: project, window_minutes: 0 }),
      rule({ project_id: project, window_minutes: 1.5 }),
      rule({ project_id: project, metric: "throughput" }),
      rule({ project_id: project, comparison: "ge" }),
      rule({ project_id: project, metric: "score_mean" }),
      rule({ project_id: project, metric: "score_mean", monitor_ref: "weave:///acme/alerts-bad/object/m:1" }),
      rule({ project_id: project, metric: "score_mean", scorer: "judge" }),
      rule({ project_id: project, webhook_url: "ftp://hooks.example.com/x" }),
      rule({ project_id: project, webhook_url: "not a url" }),
      rule({ project_id: project, threshold: "high" }),
    ];
    for (const body of bad) {
      const res = await api.post("/alerts/create", body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      const answer = (await res.json()) as { detail: { loc: unknown[] }[] };
      expect(answer.detail.length).toBeGreaterThan(0);
    }
    expect(await list(project)).toEqual([]);
  });

  it("refuses loopback and private webhook hosts unless ALERTS_ALLOWED_HOSTS lists them", async () => {
    const project = "acme/alerts-private";
    const privateUrls = [
      "http://127.0.0.1:9/hook",
      "http://localhost:9/hook",
      "http://10.1.2.3/hook",
      "http://172.16.0.1/hook",
      "http://172.31.255.255/hook",
      "http://192.168.1.1/hook",
      "http://169.254.169.254/latest",
      "http://[::1]:9/hook",
      "http://[fd00::1]/hook",
      "http://[fe80::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
    ];
    for (const url of privateUrls) {
      const res = await strictApi.post("/alerts/create", rule({ project_id: project, webhook_url: url }));
      const text = await res.text();
      expect({ url, status: res.status }).toEqual({ url, status: 422 });
      expect(text).toContain("ALERTS_ALLOWED_HOSTS");
    }
    expect(await list(project, strictApi)).toEqual([]);
    // A public address, and 172.32/12's neighbour, are fine.
    expect((await strictApi.post("/alerts/create", rule({ project_id: project, webhook_url: "http://172.32.0.1/hook" }))).status).toBe(200);
    // The allow-list lets exactly its hosts through.
    expect((await api.post("/alerts/create", rule({ project_id: project, webhook_url: "http://127.0.0.1:9/hook" }))).status).toBe(200);
    expect((await api.post("/alerts/create", rule({ project_id: project, webhook_url: "http://127.0.0.2:9/hook" }))).status).toBe(422);
    expect((await api.post("/alerts/create", rule({ project_id: project, webhook_url: "http://localhost:9/hook" }))).status).toBe(422);
  });

  it("is an admin operation", async () => {
    const doc = (await (await api.get("/openapi.json")).json()) as { paths: Record<string, { post: { description?: string } }> };
    for (const path of ["/alerts/create", "/alerts/query", "/alerts/delete"]) expect(doc.paths[path]!.post.description).toContain("`admin`");
  });
});

import { createServer, type Server } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CATALOG_NAMES } from "../../services/contract/inference.js";
import { Catalogs, shippedCatalog } from "../../services/inference/catalogs.js";
import { until, untilRead } from "../support/polling.js";
import { client, KEY_OTHER, startTestService } from "../support/service.js";

/** The inference information endpoints: shipped catalogs, served to any key, refreshed from upstream URLs. */
const PATHS = {
  analysis_models: "/inference/analysis/vendora/models",
  hardware: "/inference/vendorb/v2/hardware",
  router_models: "/inference/router/vendorc/models",
} as const;

/** A real HTTP server answering what `answers` holds for each path (404 elsewhere). */
async function catalogServer(answers: Record<string, { status: number; body: unknown }>): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const answer = answers[req.url ?? ""];
    res.writeHead(answer?.status ?? 404, { "content-type": "application/json" });
    res.end(JSON.stringify(answer?.body ?? { error: "not found" }));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, server };
}

describe("shipped catalogs", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service.stop();
  });

  it("answers each catalog as shipped, with the date of its facts and its sources, to any key", async () => {
    for (const name of CATALOG_NAMES) {
      const res = await client(service.url, KEY_OTHER).get(PATHS[name]);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { name: string; as_of: string; sources: string[]; data: unknown[] };
      expect(body).toEqual(shippedCatalog(name));
      expect(body.name).toBe(name);
      expect(body.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(body.sources.length).toBeGreaterThan(0);
      expect(body.data.length).toBeGreaterThan(0);
    }
  });

  it("refuses a request without a key", async () => {
    expect((await fetch(`${service.url}${PATHS.hardware}`)).status).toBe(401);
  });
});

describe("refresh from upstream URLs", () => {
  const log = pino({ level: "silent" });
  const ours = { object: "catalog", name: "hardware", as_of: "2026-12-01", sources: ["https://example.org/gpus"], data: [{ id: "gpu-x", memory_gb: 96 }], extra: 1 };
  const vendorList = { data: [{ id: "vendor/model-a", context_length: 8192 }] };
  let upstream: { url: string; server: Server };

  beforeAll(async () => {
    upstream = await catalogServer({
      "/hardware": { status: 200, body: ours },
      "/router": { status: 200, body: vendorList },
      "/broken": { status: 500, body: { error: "down" } },
    });
  });
  afterAll(async () => {
    await new Promise((done) => upstream.server.close(done));
  });

  it("takes a catalog in our shape as it is, and wraps a vendor's list as the data of a catalog dated today", async () => {
    const catalogs = new Catalogs({ urls: { hardware: `${upstream.url}/hardware`, router_models: `${upstream.url}/router` }, refreshMs: 60_000 }, log);
    expect((await catalogs.refresh()).sort()).toEqual(["hardware", "router_models"]);
    expect(catalogs.get("hardware")).toEqual(ours);
    expect(catalogs.get("router_models")).toEqual({
      object: "catalog",
      name: "router_models",
      as_of: new Date().toISOString().slice(0, 10),
      sources: [`${upstream.url}/router`],
      data: vendorList.data,
    });
    expect(catalogs.get("analysis_models")).toEqual(shippedCatalog("analysis_models"));
  });

  it("keeps the catalog it had when the upstream fails or answers something else", async () => {
    const catalogs = new Catalogs({ urls: { hardware: `${upstream.url}/broken`, router_models: `${upstream.url}/nothing` }, refreshMs: 60_000 }, log);
    expect(await catalogs.refresh()).toEqual([]);
    expect(catalogs.get("hardware")).toEqual(shippedCatalog("hardware"));
    expect(catalogs.get("router_models")).toEqual(shippedCatalog("router_models"));
  });

  it("serves the refreshed catalog once the service has fetched it (INFERENCE_CATALOG_URLS)", async () => {
    const service = await startTestService({ INFERENCE_CATALOG_URLS: JSON.stringify({ hardware: `${upstream.url}/hardware` }) });
    try {
      const api = client(service.url);
      // The first refresh starts with the service; poll until it has landed.
      const body = await untilRead(async () => (await (await api.get(PATHS.hardware)).json()) as { as_of: string }, (read) => read.as_of === ours.as_of, { timeoutMs: 5_000, everyMs: 50 });
      expect(body).toEqual(ours);
    } finally {
      await service.stop();
    }
  });

  it("stops refreshing when the service stops", async () => {
    let fetches = 0;
    const counting = createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(ours));
    });
    await new Promise<void>((done) => counting.listen(0, "127.0.0.1", done));
    const address = counting.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/hardware`;
    const service = await startTestService({ INFERENCE_CATALOG_URLS: JSON.stringify({ hardware: url }), INFERENCE_CATALOG_REFRESH_MS: "1000" });
    try {
      await until(() => fetches >= 2, { everyMs: 50, what: "the catalog's second fetch" });
    } finally {
      await service.stop();
    }
    const atStop = fetches;
    await new Promise((done) => setTimeout(done, 2_500));
    await new Promise((done) => counting.close(done));
    expect(fetches).toBe(atStop);
  });
});

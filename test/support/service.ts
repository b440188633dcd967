import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, inject } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { loadConfig } from "../../services/config.js";
import { startService, type RunningService } from "../../services/service.js";
import { freePort } from "../../services/store/localServer.js";
import { suiteClickHouse, suiteCluster } from "./database.js";
import { SUITE_READ_YOUR_WRITES_WAIT_MS } from "./suiteSettings.js";
import { AUTH_KEYS, basic, KEY_ACME } from "./keys.js";

export { AUTH_KEYS, basic, KEY_ACME, KEY_ADMIN, KEY_OTHER } from "./keys.js";

/**
 * A whole service (ingest, worker, query) in this process, on its own fresh database, in the
 * configuration `make start` gives (the durable log, its consumer in a thread of its own)
 * unless `env` says otherwise. A write is answered once it is durable and stored a moment
 * later; an operation on a project waits for that project's queued writes (read-your-writes),
 * and `waitStored` waits for all of them (the service's barrier, `GET /queue/stored`). The data
 * directory made here is removed by `stop()`; one passed in `env.DATA_DIR` is the caller's.
 * OTLP/gRPC is served on a free port (`otlpGrpcUrl`) unless `env.OTLP_GRPC_PORT` says otherwise.
 */
export async function startTestService(env: Record<string, string> = {}): Promise<RunningService & { url: string; database: string }> {
  const database = `s_${randomBytes(6).toString("hex")}`;
  const clickhouse = await suiteClickHouse();
  const cluster = suiteCluster();
  const ownDataDir = env.DATA_DIR === undefined ? mkdtempSync(join(tmpdir(), "tracehouse-svc-")) : null;
  const configOnFreePort = async () => loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    ...(typeof clickhouse === "string" ? { CLICKHOUSE_URL: clickhouse } : {}),
    CLICKHOUSE_DATABASE: database,
    ...(cluster === undefined ? {} : { CLICKHOUSE_CLUSTER: cluster, CLICKHOUSE_ALTER_CLUSTER: inject("clickhouseAlterCluster") ?? cluster }),
    ...(ownDataDir === null ? {} : { DATA_DIR: ownDataDir }),
    AUTH_KEYS,
    LOG_LEVEL: "silent",
    READ_YOUR_WRITES_WAIT_MS: SUITE_READ_YOUR_WRITES_WAIT_MS,
    OTLP_GRPC_PORT: String(await freePort()),
    ...env,
  });
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  let config = await configOnFreePort();
  let service: RunningService;
  for (let attempt = 1; ; attempt++) {
    try {
      service = await startService(config, log, typeof clickhouse === "string" ? {} : { clickhouse });
      break;
    } catch (err) {
      // The free port found for OTLP/gRPC can be taken by another test process before the service binds it.
      if (env.OTLP_GRPC_PORT !== undefined || attempt === 3 || !/OTLP_GRPC_PORT/.test(String(err))) throw err;
      config = await configOnFreePort();
    }
  }
  const stop = async () => {
    await service.stop();
    if (ownDataDir !== null) rmSync(ownDataDir, { recursive: true, force: true });
  };
  return { ...service, stop, url: service.url!, database: config.CLICKHOUSE_DATABASE };
}

export interface Client {
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  json<T = unknown>(path: string, body: unknown): Promise<T>;
  lines<T = unknown>(path: string, body: unknown): Promise<T[]>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
}

/** Waits until every write the service acknowledged so far is stored (its barrier, `GET /queue/stored`). */
export async function waitStored(baseUrl: string, key: string = KEY_ACME): Promise<void> {
  const res = await fetch(`${baseUrl}/queue/stored`, { headers: { authorization: basic(key) } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/queue/stored answered ${res.status}: ${text}`);
}

/** A client of the API with `key`: it sends each request as soon as the last one is answered, as SDKs do. */
export function client(baseUrl: string, key: string = KEY_ACME): Client {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(key), ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return {
    post,
    get: (path, headers = {}) => fetch(`${baseUrl}${path}`, { headers: { authorization: basic(key), ...headers } }),
    async json<T>(path: string, body: unknown) {
      const res = await post(path, body);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
      return JSON.parse(text) as T;
    },
    async lines<T>(path: string, body: unknown) {
      const res = await post(path, body);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
      return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as T);
    },
  };
}

export const iso = (ms: number, micros = 0) => new Date(ms).toISOString().replace("Z", `${String(micros).padStart(3, "0")}Z`);

/** The run's service as separate processes (the cluster run: test/support/topology.ts), as a file's service. */
function sharedTopology(): Awaited<ReturnType<typeof startTestService>> | null {
  const topology = inject("serviceTopology");
  if (!topology) return null;
  return {
    url: topology.url,
    // Its ingest processes serve OTLP over HTTP only (behind the routing proxy).
    otlpGrpcUrl: null,
    database: topology.database,
    clickhouseUrl: inject("clickhouseUrl"),
    apiKey: null,
    get operations(): never {
      throw new Error("the operations of a service in separate processes are not known to the test file");
    },
    // The run's, stopped by its global setup.
    stop: async () => {},
  };
}

/**
 * One service for the calling test file: started before its tests (its `beforeAll` runs ahead
 * of the file's own), stopped after them. `url` and `database` exist once it started; `api`
 * may be taken at once (it forwards to the key's client of the started service). In the
 * cluster run, a file that asks for no setting of its own gets the run's service in separate
 * processes instead (2 ingest, 2 workers, 1 query behind a routing proxy), on the run's database.
 */
export function serviceForFile(env: Record<string, string> = {}): Pick<Awaited<ReturnType<typeof startTestService>>, "url" | "otlpGrpcUrl" | "database" | "operations"> & { readonly api: Client } {
  let service: Awaited<ReturnType<typeof startTestService>> | null = null;
  let started: Client | null = null;
  const current = (): Client => {
    if (started === null) throw new Error("the file's service is not started yet (use it inside tests or hooks)");
    return started;
  };
  beforeAll(async () => {
    service = (Object.keys(env).length === 0 ? sharedTopology() : null) ?? (await startTestService(env));
    started = client(service.url);
  });
  afterAll(async () => service?.stop());
  const api: Client = {
    post: (path, body, headers) => current().post(path, body, headers),
    get: (path, headers) => current().get(path, headers),
    json: (path, body) => current().json(path, body),
    lines: (path, body) => current().lines(path, body),
  };
  return {
    get url() {
      return service!.url;
    },
    get otlpGrpcUrl() {
      return service!.otlpGrpcUrl;
    },
    get database() {
      return service!.database;
    },
    get operations() {
      return service!.operations;
    },
    api,
  };
}

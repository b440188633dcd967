import type { Request } from "express";
import { openApiDocument } from "../contract/openapi.js";
import { geolocateOp, healthOp, projectsInfoOp, queueStoredOp, serverInfoOp, versionOp } from "../contract/service.js";
import { ClientError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { metricsText } from "../metrics.js";
import { docsPage } from "./docsPage.js";

export const SERVICE_VERSION = "0.1.0";
// No Weave Python SDK is too old for this server (the reference no-op server answers the same); a
// higher minimum makes older SDKs disable tracing. PEP 440, like SERVICE_VERSION.
export const MIN_WEAVE_PYTHON_VERSION = "0.0.1";

export interface HealthProbe {
  clickhouse(): Promise<boolean>;
  queue(): Promise<boolean>;
  /** `ReadYourWrites.stored` of the queue (queue/queue.ts); absent where it cannot know. */
  queueStored?: (timeoutMs: number) => Promise<void>;
}

/**
 * The caller's address: the socket peer, or, when that peer is a trusted proxy, the
 * right-most X-Forwarded-For address that is not itself a trusted proxy.
 */
export function clientIp(req: Request, trustedProxies: readonly string[]): string {
  const normalize = (ip: string) => ip.replace(/^::ffff:/, "").trim();
  const peer = normalize(req.socket.remoteAddress ?? "");
  const trusted = new Set(trustedProxies.map(normalize));
  if (!trusted.has(peer)) return peer;
  const header = req.headers["x-forwarded-for"];
  const chain = (Array.isArray(header) ? header.join(",") : header ?? "").split(",").map(normalize).filter(Boolean);
  for (let i = chain.length - 1; i >= 0; i--) if (!trusted.has(chain[i]!)) return chain[i]!;
  return peer;
}

type GeoLookup = (ip: string) => { country: string; region: string; city: string; timezone: string } | null;
let geoLookup: Promise<GeoLookup> | null = null;

/** geoip-lite keeps its database in memory: loaded on the first /geolocate only. */
function loadGeo(): Promise<GeoLookup> {
  geoLookup ??= import("geoip-lite").then((m) => (ip: string) => m.default.lookup(ip));
  return geoLookup;
}

const orNull = (s: string | undefined) => (s ? s : null);

export function mountServiceRoutes(api: HttpApi, probe: HealthProbe, trustedProxies: readonly string[]): void {
  api.mount(healthOp, async (_input, ctx) => {
    const [clickhouse, queue] = await Promise.all([probe.clickhouse().catch(() => false), probe.queue().catch(() => false)]);
    const healthy = clickhouse && queue;
    ctx.res.status(healthy ? 200 : 503).json({ status: healthy ? "ok" : "degraded", clickhouse, queue });
  });
  api.mount(queueStoredOp, async ({ query }) => {
    if (!probe.queueStored) throw new ClientError(501, "this process publishes to no queue: it cannot tell when the workers stored a write");
    await probe.queueStored(query.timeout_ms);
    return { stored: true as const };
  });
  api.mount(versionOp, async () => SERVICE_VERSION);
  api.mount(serverInfoOp, async () => ({ min_required_weave_python_version: MIN_WEAVE_PYTHON_VERSION, trace_server_version: SERVICE_VERSION }));
  api.mount(projectsInfoOp, async ({ body: req }, ctx) =>
    req.project_ids
      .filter((id) => ctx.mayReach(id))
      .map((id) => ({ external_project_id: id, internal_project_id: id })),
  );
  api.mount(geolocateOp, async (_input, ctx) => {
    const ip = clientIp(ctx.req, trustedProxies);
    const found = (await loadGeo())(ip);
    return { ip, country: orNull(found?.country), region: orNull(found?.region), city: orNull(found?.city), timezone: orNull(found?.timezone) };
  });
}

/** Documents and metrics, mounted after every operation so the document lists them all. */
export function mountDocs(api: HttpApi): void {
  let document: object | null = null;
  const doc = () => (document ??= openApiDocument(api.operations, SERVICE_VERSION));
  api.route("get", "/openapi.json", (_req, res) => void res.json(doc()));
  api.route("get", "/docs", (_req, res) => void res.type("html").send(docsPage(doc())));
  api.route("get", "/metrics", async (_req, res) => {
    const { contentType, text } = await metricsText();
    res.type(contentType).send(text);
  });
}

import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Operation } from "../../services/contract/operation.js";

/**
 * What a load balancer in front of separate processes does: a request for an ingest
 * operation (one of `ingestOperations`, the `queued` ones a ROLE=ingest service mounts)
 * goes to the ingest processes in turn, any other request to the query process. Bodies and
 * answers are streamed through as they come.
 */
export interface RoutingProxy {
  readonly url: string;
  stop(): Promise<void>;
}

/** A matcher of an operation's method and OpenAPI path (`/objs/{object_id}/versions`). */
function routeMatcher(op: Pick<Operation, "method" | "path">): (method: string, path: string) => boolean {
  const pattern = new RegExp(`^${op.path.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")).join("[^/]+")}$`);
  const method = op.method.toUpperCase();
  return (m, path) => m === method && pattern.test(path);
}

export async function startRoutingProxy(ingestOperations: readonly Pick<Operation, "method" | "path">[], ingestUrls: readonly string[], queryUrl: string): Promise<RoutingProxy> {
  if (ingestOperations.length === 0 || ingestUrls.length === 0) throw new Error("a routing proxy needs ingest operations and processes");
  const isIngest = ingestOperations.map(routeMatcher);
  let next = 0;
  const target = (req: IncomingMessage): string => {
    const path = new URL(req.url ?? "/", "http://proxy").pathname;
    if (!isIngest.some((matches) => matches(req.method ?? "GET", path))) return queryUrl;
    next = (next + 1) % ingestUrls.length;
    return ingestUrls[next]!;
  };
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const upstream = request(`${target(req)}${req.url ?? "/"}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", (err) => {
      if (res.headersSent) res.destroy(err);
      else res.writeHead(502, { "content-type": "text/plain" }).end(`routing proxy: ${err.message}`);
    });
    req.pipe(upstream);
  };
  const server: Server = createServer(forward);
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

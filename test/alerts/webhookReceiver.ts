import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One POST the receiver got. */
export interface Received {
  readonly path: string;
  readonly deliveryId: string;
  readonly body: Record<string, unknown>;
  /** The status the receiver answered. */
  readonly status: number;
}

/**
 * A webhook receiver on 127.0.0.1: records every POST and answers 200, except on paths that
 * start with `/flaky`, where the first attempt of each delivery (by `X-Alert-Delivery-Id`) is
 * answered 500.
 */
export async function startReceiver(): Promise<{ url: string; received: Received[]; ok: (path: string) => Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const failedOnce = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const deliveryId = String(req.headers["x-alert-delivery-id"] ?? "");
      let status = 200;
      if (path.startsWith("/flaky") && !failedOnce.has(deliveryId)) {
        failedOnce.add(deliveryId);
        status = 500;
      }
      received.push({ path, deliveryId, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>, status });
      res.writeHead(status, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    ok: (path) => received.filter((r) => r.path === path && r.status === 200),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

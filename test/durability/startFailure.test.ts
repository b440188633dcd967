import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePorts } from "../../services/store/localServer.js";
import { client, iso, startTestService, waitStored } from "../support/service.js";

/** A start that fails part way (OTLP/gRPC's port taken) in a process that lives on, as a test's or an embedder's does. */
const listening = (port: number): Promise<Server> =>
  new Promise((up, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => up(server));
  });

describe("a start that fails part way", () => {
  it("is refused with the port it could not take, and leaves the log, its lock and the HTTP port free for the next start", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tracehouse-start-"));
    const [httpPort, grpcPort] = (await freePorts(2)) as [number, number];
    const taken = await listening(grpcPort);
    try {
      const env = { DATA_DIR: dataDir, PORT: String(httpPort) };
      await expect(startTestService({ ...env, OTLP_GRPC_PORT: String(grpcPort) })).rejects.toThrow(new RegExp(`OTLP_GRPC_PORT ${grpcPort}`));
      // The log's lock would hold a second start for 30 s, then refuse it; the HTTP port would be in use.
      const service = await startTestService({ ...env, OTLP_GRPC_PORT: "0" });
      try {
        expect(service.url).toBe(`http://127.0.0.1:${httpPort}`);
        const start = { project_id: "acme/restart", id: "c1", op_name: "op", trace_id: "t1", started_at: iso(Date.UTC(2026, 10, 29)), attributes: {}, inputs: {} };
        expect((await client(service.url).post("/call/start", { start })).status).toBe(200);
        await waitStored(service.url);
        expect((await client(service.url).lines<{ id: string }>("/calls/stream_query", { project_id: "acme/restart" })).map((c) => c.id)).toEqual(["c1"]);
      } finally {
        await service.stop();
      }
    } finally {
      taken.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

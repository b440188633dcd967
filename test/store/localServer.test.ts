import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalClickHouse } from "../../services/store/localServer.js";

const dir = mkdtempSync(join(tmpdir(), "local-ch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the local ClickHouse server (make start)", () => {
  it("stops on SIGTERM by itself, without being killed, and starts again on its data", async () => {
    const server = await startLocalClickHouse(dir);
    // A connection left open from the start-up check would hold the server's shutdown until it is killed.
    expect(await server.stop()).toEqual({ code: 0, signal: null });
    const again = await startLocalClickHouse(dir);
    expect(await again.stop()).toEqual({ code: 0, signal: null });
  });
});

import { gzipSync, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/operation.js";
import { basic, client, KEY_ACME, startTestService } from "../support/service.js";
import { Faults, messageOf, send } from "./hostile.js";

/**
 * Hostile transports: compression bombs on OTLP (a small body that inflates far past
 * OTLP_MAX_BODY_BYTES is refused with 413 once the cap is passed, the rest never inflated),
 * and multipart abuse on every operation that takes a multipart body (enumerated from the
 * service): each refused with a 4xx that says why, and nothing stored.
 */
const PROJECT = "acme/hostile-files";
const OTLP_LIMIT = 1024 * 1024;

describe("hostile transports", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  beforeAll(async () => {
    service = await startTestService({ OTLP_MAX_BODY_BYTES: String(OTLP_LIMIT) });
  });
  afterAll(async () => service.stop());

  const otlp = (body: Uint8Array, encoding: string, contentType: string) =>
    fetch(`${service.url}/otel/v1/traces`, {
      method: "POST",
      headers: { authorization: basic(KEY_ACME), project_id: PROJECT, "content-type": contentType, "content-encoding": encoding },
      body: new Uint8Array(body),
      signal: AbortSignal.timeout(30_000),
    });

  it("a gzip or deflate bomb on OTLP (64 KiB inflating to 64 MiB, 64 times the limit) → 413, in the request's format", async () => {
    const zeros = Buffer.alloc(64 * 1024 * 1024);
    const bombs: [string, Buffer][] = [["gzip", gzipSync(zeros, { level: 9 })], ["deflate", deflateSync(zeros, { level: 9 })]];
    for (const [encoding, bomb] of bombs) {
      expect(bomb.length).toBeLessThan(OTLP_LIMIT);
      for (const contentType of ["application/x-protobuf", "application/json"]) {
        const res = await otlp(bomb, encoding, contentType);
        const body = Buffer.from(await res.arrayBuffer());
        expect({ encoding, contentType, status: res.status }).toEqual({ encoding, contentType, status: 413 });
        if (contentType === "application/json") expect(JSON.parse(body.toString())).toMatchObject({ code: 3, message: expect.stringMatching(/limit/) });
      }
    }
    const calls = await client(service.url).lines("/calls/stream_query", { project_id: PROJECT });
    expect(calls).toEqual([]);
  });

  it("a JSON bomb inside a gzip body: nested 100,000 deep → 400, never a 5xx", async () => {
    const deep = gzipSync(`${"[".repeat(100_000)}${"]".repeat(100_000)}`);
    const res = await otlp(deep, "gzip", "application/json");
    expect(res.status).toBe(400);
    expect(JSON.parse(await res.text())).toMatchObject({ code: 3, message: expect.stringMatching(/nested deeper than/) });
  });

  const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
  const part = (name: string, value: string | Buffer, filename?: string) =>
    Buffer.concat([
      Buffer.from(`--b\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n${filename ? "Content-Type: application/octet-stream\r\n" : ""}\r\n`),
      Buffer.from(value),
      Buffer.from("\r\n"),
    ]);
  const END = Buffer.from("--b--\r\n");
  const ABUSE: Record<string, { body: Buffer; contentType?: string }> = {
    "no file part": { body: Buffer.concat([part("project_id", PROJECT), END]) },
    "two file parts": { body: Buffer.concat([part("project_id", PROJECT), part("file", PNG, "a.png"), part("file", PNG, "b.png"), END]) },
    "a file part under another name": { body: Buffer.concat([part("project_id", PROJECT), part("other", PNG, "a.png"), END]) },
    "a field of 1 MiB": { body: Buffer.concat([part("project_id", PROJECT), part("note", "x".repeat(1024 * 1024)), part("file", PNG, "a.png"), END]) },
    "a project_id of 1 MiB": { body: Buffer.concat([part("project_id", `acme/${"x".repeat(1024 * 1024)}`), part("file", PNG, "a.png"), END]) },
    "100 fields": { body: Buffer.concat([part("project_id", PROJECT), ...Array.from({ length: 100 }, (_, i) => part(`f${i}`, "v")), part("file", PNG, "a.png"), END]) },
    "the file before project_id": { body: Buffer.concat([part("file", PNG, "a.png"), part("project_id", PROJECT), END]) },
    "project_id sent twice": { body: Buffer.concat([part("project_id", PROJECT), part("project_id", "other/p"), part("file", PNG, "a.png"), END]) },
    "a project_id with SQL in it": { body: Buffer.concat([part("project_id", "acme/x'); DROP TABLE files; --"), part("file", PNG, "a.png"), END]) },
    "no boundary in the content type": { body: Buffer.concat([part("project_id", PROJECT), part("file", PNG, "a.png"), END]), contentType: "multipart/form-data" },
    "a boundary the body never uses": { body: Buffer.concat([part("project_id", PROJECT), part("file", PNG, "a.png"), END]), contentType: "multipart/form-data; boundary=zzz" },
    "a body truncated inside the file": { body: Buffer.concat([part("project_id", PROJECT), part("file", PNG, "a.png")]).subarray(0, -6) },
    "a body without its closing boundary": { body: Buffer.concat([part("project_id", PROJECT), part("file", PNG, "a.png")]) },
    "an empty body": { body: Buffer.alloc(0) },
    "headers without a blank line": { body: Buffer.from(`--b\r\nContent-Disposition: form-data; name="project_id"\r\n${"X-Long: y\r\n".repeat(2000)}`) },
    "JSON instead of multipart": { body: Buffer.from(JSON.stringify({ project_id: PROJECT, file: "x" })), contentType: "application/json" },
  };

  it("multipart abuse on every multipart operation → 4xx with a message, and nothing stored", async () => {
    const multipart = service.operations.filter((op: Operation) => op.multipart !== undefined);
    expect(multipart.map((op) => op.path).sort()).toEqual(expect.arrayContaining(["/file/create", "/image/create"]));
    const faults = new Faults();
    for (const op of multipart) {
      for (const [name, { body, contentType }] of Object.entries(ABUSE)) {
        const answer = await send(service.url, op, { body, headers: { "content-type": contentType ?? "multipart/form-data; boundary=b" }, key: KEY_ACME });
        faults.check(op, name, answer);
        if (answer.status < 400) faults.found.push(`${op.id} (${name}): accepted with ${answer.status}`);
        else expect(messageOf(answer.text)).not.toBeNull();
      }
    }
    expect(faults.found).toEqual([]);
    expect(await client(service.url).json("/files/query_stats", { project_id: PROJECT })).toEqual({ total_size_bytes: 0 });
  });
});

import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fileDigest } from "../../services/digests.js";
import { CHUNK_BYTES } from "../../services/store/files/fileRows.js";
import { client, serviceForFile } from "../support/service.js";
import { contentPiece, generatedContent, postForm, readContent, sendWholeThenRead, storedFor, streamUpload, tinyPng } from "./support.js";

/** Above one insert of chunks (8 MiB), so that a refused upload has chunks to drop. */
const LIMIT = 10 * CHUNK_BYTES + 3;
const TOO_LARGE = { detail: `the file is larger than the limit of ${LIMIT} bytes`, message: `the file is larger than the limit of ${LIMIT} bytes` };

const service = serviceForFile({ FILE_MAX_BYTES: String(LIMIT) });

const stored = (project: string) => storedFor(service.database, project);
const stats = (project: string) => client(service.url).json<{ total_size_bytes: number }>("/files/query_stats", { project_id: project });

describe("FILE_MAX_BYTES", () => {
  it("accepts a file of exactly the limit", async () => {
    const project = "acme/limit-exact";
    const seed = randomBytes(4096);
    const res = await streamUpload(service.url, project, generatedContent(LIMIT, seed));
    expect(res).toEqual({ status: 200, body: { digest: fileDigest(contentPiece(0, LIMIT, seed)) } });
    expect(await stats(project)).toEqual({ total_size_bytes: LIMIT });
  });

  it("refuses a streamed upload one byte over with 413, and drops the chunks it had already stored", async () => {
    const project = "acme/limit-over";
    const res = await streamUpload(service.url, project, generatedContent(LIMIT + 1, randomBytes(4096)));
    expect(res).toEqual({ status: 413, body: TOO_LARGE });
    expect(await stats(project)).toEqual({ total_size_bytes: 0 });
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("answers 413 without reading the rest of a much larger streamed upload", async () => {
    const project = "acme/limit-far-over";
    let pulled = 0;
    async function* counted(): AsyncGenerator<Buffer> {
      for await (const piece of generatedContent(200 * CHUNK_BYTES, randomBytes(4096))) {
        pulled += piece.length;
        yield piece;
      }
    }
    const res = await streamUpload(service.url, project, counted());
    expect(res).toEqual({ status: 413, body: TOO_LARGE });
    console.log(`413 after the client produced ${(pulled / CHUNK_BYTES).toFixed(1)} MiB of a 200 MiB upload`);
    expect(pulled).toBeLessThan(100 * CHUNK_BYTES);
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it.each(["length", "chunked"] as const)("answers 413 to a client that writes its whole over-limit body before reading (%s)", async (framing) => {
    const project = `acme/limit-write-first-${framing}`;
    const content = contentPiece(0, LIMIT + 6 * CHUNK_BYTES, randomBytes(4096));
    expect(await sendWholeThenRead(service.url, project, content, framing)).toEqual({ status: 413, connection: "close", body: TOO_LARGE });
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("refuses a body whose Content-Length announces more than the limit before reading it", async () => {
    const project = "acme/limit-declared";
    const res = await postForm(`${service.url}/file/create`, [["project_id", project], ["file", Buffer.alloc(LIMIT + 70 * 1024), "big.bin"]]);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 413, body: TOO_LARGE });
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("applies to /image/create too", async () => {
    const project = "acme/limit-image";
    const image = Buffer.concat([tinyPng(), Buffer.alloc(LIMIT)]);
    const res = await postForm(`${service.url}/image/create`, [["project_id", project], ["file", image, "big.png"]]);
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 413, body: TOO_LARGE });
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("still serves uploads on the same connection pool afterwards", async () => {
    const project = "acme/limit-after";
    const content = Buffer.from("after the refusals");
    const res = await postForm(`${service.url}/file/create`, [["project_id", project], ["file", content, "a.txt"]]);
    expect(await res.json()).toEqual({ digest: fileDigest(content) });
    expect((await readContent(service.url, project, fileDigest(content))).bytes).toEqual(content);
  });
});

import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fileDigest } from "../../services/digests.js";
import { suiteClickHouse } from "../support/database.js";
import { basic, client, KEY_ACME, serviceForFile, waitStored } from "../support/service.js";
import { contentPiece, generatedContent, streamUpload } from "./support.js";

/**
 * A 100 MB file streamed in and out. The content is generated while it is sent (nothing on
 * disk, never whole in memory while streaming); the service runs in this process, so the
 * RSS growth printed is the service's plus the client's pieces in flight.
 */
const SIZE = 100 * 1024 * 1024 + 12_345;
const MB = 1024 * 1024;
const P = "acme/large";

const service = serviceForFile();

/** Samples RSS every 25 ms while `run` runs; answers its result and the peak growth over the RSS before. */
async function peakRssGrowth<T>(run: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
  try {
    const result = await run();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, growthMb: (peak - before) / MB };
  } finally {
    clearInterval(sampler);
  }
}

describe("a 100 MB file", () => {
  it("streams in and out with its digest checked and bounded memory", async () => {
    const seed = randomBytes(64 * 1024 + 7);
    // The baseline once the log's worker thread is up (it starts after the service listens): a write stored.
    const start = { project_id: P, id: "warm", op_name: "op", trace_id: "t", started_at: new Date().toISOString(), attributes: {}, inputs: {} };
    expect((await service.api.post("/call/start", { start })).status).toBe(200);
    await waitStored(service.url);

    const upload = await peakRssGrowth(() => streamUpload(service.url, P, generatedContent(SIZE, seed)));
    console.log(`upload of ${(SIZE / MB).toFixed(1)} MiB: peak RSS growth ${upload.growthMb.toFixed(1)} MiB`);
    expect(upload.result.status).toBe(200);

    const download = await peakRssGrowth(async () => {
      const res = await fetch(`${service.url}/file/content`, {
        method: "POST",
        headers: { authorization: basic(KEY_ACME), "content-type": "application/json" },
        body: JSON.stringify({ project_id: P, digest: (upload.result.body as { digest: string }).digest }),
      });
      const hash = createHash("sha256");
      let bytes = 0;
      let mismatchAt = -1;
      for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
        if (mismatchAt < 0 && !Buffer.from(piece).equals(contentPiece(bytes, piece.length, seed))) mismatchAt = bytes;
        hash.update(piece);
        bytes += piece.length;
      }
      return { status: res.status, type: res.headers.get("content-type"), length: res.headers.get("content-length"), bytes, mismatchAt, sha256: hash.digest("hex") };
    });
    console.log(`download: peak RSS growth ${download.growthMb.toFixed(1)} MiB`);

    const whole = contentPiece(0, SIZE, seed);
    expect(upload.result.body).toEqual({ digest: fileDigest(whole) });
    expect(download.result).toEqual({
      status: 200,
      type: "application/octet-stream",
      length: String(SIZE),
      bytes: SIZE,
      mismatchAt: -1,
      sha256: createHash("sha256").update(whole).digest("hex"),
    });
    expect(await client(service.url).json("/files/query_stats", { project_id: P })).toEqual({ total_size_bytes: SIZE });
    // A generous sanity bound against buffering the file whole (the figures are printed above).
    // Not on the chdb run, where ClickHouse itself runs in this process and its memory counts too.
    if (typeof (await suiteClickHouse()) === "string") expect(upload.growthMb).toBeLessThan(200);
  });
});

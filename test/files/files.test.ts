import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { fileDigest } from "../../services/digests.js";
import { CHUNK_BYTES } from "../../services/store/files/fileRows.js";
import { basic, KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { storeOn } from "../support/database.js";
import { untilRead } from "../support/polling.js";
import { generatedContent, postForm, readContent, storedFor, streamUpload, uploadFile } from "./support.js";

const service = serviceForFile();
const api = service.api;
const P = "acme/files";


/** Rows of file_chunks for a project, tombstones included. */
async function chunkRows(project: string): Promise<number> {
  const store = await storeOn(service.database);
  try {
    const pb = new ParamBuilder();
    const [row] = await store.rows<{ n: string }>("test_chunk_rows", { sql: `SELECT count() AS n FROM file_chunks WHERE project_id = ${pb.str(project)}`, params: pb.params });
    return Number(row?.n ?? 0);
  } finally {
    await store.close();
  }
}

/** Polls `read` until `done` holds (at most 20 s), answering the last value read. */
const eventually = <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => untilRead(read, done, { timeoutMs: 20_000, everyMs: 100 });

const stats = (project: string) => api.json<{ total_size_bytes: number }>("/files/query_stats", { project_id: project });
const stored = (project: string) => storedFor(service.database, project);

describe("file/create and file/content", () => {
  it("answers exactly {digest} and serves the same bytes back as application/octet-stream", async () => {
    const content = Buffer.from("hello, files\n", "utf8");
    const res = await postForm(`${service.url}/file/create`, [["project_id", P], ["file", content, "hello.txt"]]);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ digest: fileDigest(content) });

    const back = await readContent(service.url, P, fileDigest(content));
    expect(back).toEqual({ status: 200, type: "application/octet-stream", length: String(content.length), bytes: content });
  });

  it.each([
    ["empty", 0],
    ["one byte", 1],
    ["one byte short of a chunk", CHUNK_BYTES - 1],
    ["exactly one chunk", CHUNK_BYTES],
    ["one byte over a chunk", CHUNK_BYTES + 1],
    ["more than one insert of chunks", 9 * CHUNK_BYTES + 12_345],
  ])("round-trips binary content of any length: %s", async (_name, size) => {
    const content = randomBytes(size);
    const { digest } = await uploadFile(service.url, P, content);
    expect(digest).toBe(fileDigest(content));
    const back = await readContent(service.url, P, digest);
    expect(back.status).toBe(200);
    expect(back.bytes.equals(content)).toBe(true);
  });

  it("keeps bytes that are not UTF-8 exactly (every byte value, NUL and invalid sequences)", async () => {
    const content = Buffer.from([...Array(256).keys(), 0xc3, 0x28, 0xff, 0xfe, 0x00, 0x0a, 0x0d]);
    const { digest } = await uploadFile(service.url, P, content);
    expect((await readContent(service.url, P, digest)).bytes).toEqual(content);
  });

  it("the plural paths /files/create and /files/content are the same operations", async () => {
    const content = Buffer.from("via the plural paths");
    expect(await uploadFile(service.url, P, content, "/files/create")).toEqual({ digest: fileDigest(content) });
    const back = await readContent(service.url, P, fileDigest(content), "/files/content");
    expect({ status: back.status, type: back.type, bytes: back.bytes.toString() }).toEqual({ status: 200, type: "application/octet-stream", bytes: "via the plural paths" });
    expect((await readContent(service.url, P, fileDigest(content))).bytes.toString()).toBe("via the plural paths");
  });

  it("accepts expected_digest when it is the content's digest, refuses with 400 naming both when not, and stores nothing then", async () => {
    const project = "acme/files-expected";
    const content = Buffer.from("expected digest check");
    const good = await postForm(`${service.url}/file/create`, [["project_id", project], ["expected_digest", fileDigest(content)], ["file", content, "a.txt"]]);
    expect({ status: good.status, body: await good.json() }).toEqual({ status: 200, body: { digest: fileDigest(content) } });

    const other = Buffer.from("other content");
    const bad = await postForm(`${service.url}/file/create`, [["project_id", project], ["expected_digest", "not-the-digest"], ["file", other, "b.txt"]]);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ detail: `digest mismatch: expected_digest is not-the-digest, the content's digest is ${fileDigest(other)}`, message: `digest mismatch: expected_digest is not-the-digest, the content's digest is ${fileDigest(other)}` });
    expect((await readContent(service.url, project, fileDigest(other))).status).toBe(404);
    expect(await stored(project)).toEqual({ files: 1, liveChunks: 1 });

    const empty = await postForm(`${service.url}/file/create`, [["project_id", project], ["expected_digest", ""], ["file", other, "b.txt"]]);
    expect(empty.status).toBe(200);
  });

  it("answers 404 with the detail shape for a digest the project does not have, and for another project's file", async () => {
    const content = Buffer.from("only in acme/files");
    const { digest } = await uploadFile(service.url, P, content);
    const missing = await api.post("/file/content", { project_id: P, digest: "nope" });
    expect({ status: missing.status, body: await missing.json() }).toEqual({ status: 404, body: { detail: `file nope not found in project ${P}`, message: `file nope not found in project ${P}` } });
    const elsewhere = await api.post("/file/content", { project_id: "acme/files-elsewhere", digest });
    expect(elsewhere.status).toBe(404);
  });

  it("refuses to serve a file to a key of another entity (403) and validates the JSON body (422)", async () => {
    const { digest } = await uploadFile(service.url, P, Buffer.from("secret"));
    expect((await readContent(service.url, P, digest, "/file/content", KEY_OTHER)).status).toBe(403);
    const res = await api.post("/file/content", { project_id: P });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc)).toEqual([["body", "digest"]]);
  });
});

describe("files/query_stats", () => {
  it("sums the bytes of the project's distinct files: the same content uploaded twice counts once", async () => {
    const project = "acme/files-stats";
    expect(await stats(project)).toEqual({ total_size_bytes: 0 });
    const a = randomBytes(2 * CHUNK_BYTES + 7);
    const b = Buffer.from("small");
    await uploadFile(service.url, project, a);
    await uploadFile(service.url, project, a, "/files/create");
    await uploadFile(service.url, project, b);
    expect(await stats(project)).toEqual({ total_size_bytes: a.length + b.length });
    expect(await api.json("/files/stats", { project_id: project })).toEqual({ total_size_bytes: a.length + b.length });
    // The second upload of `a` was dropped: its chunks are tombstoned, the first ones serve.
    expect(await stored(project)).toEqual({ files: 2, liveChunks: 3 + 1 });
    expect((await readContent(service.url, project, fileDigest(a))).bytes.equals(a)).toBe(true);
  });

  it("serves one copy and keeps one copy's chunks when identical uploads race", async () => {
    const project = "acme/files-race";
    const content = randomBytes(CHUNK_BYTES + 3);
    const answers = await Promise.all(Array.from({ length: 4 }, () => uploadFile(service.url, project, content)));
    expect(answers).toEqual(Array(4).fill({ digest: fileDigest(content) }));
    expect(await stats(project)).toEqual({ total_size_bytes: content.length });
    expect((await readContent(service.url, project, fileDigest(content))).bytes.equals(content)).toBe(true);
    const { files, liveChunks } = await stored(project);
    expect(files).toBeGreaterThanOrEqual(1);
    expect(liveChunks).toBe(2);
  });
});

describe("refused uploads store nothing", () => {
  const project = "acme/files-refused";
  const url = () => `${service.url}/file/create`;
  const detail = async (res: Response) => ({ status: res.status, body: (await res.json()) as unknown });
  const issue = (loc: string[], msg: string, type = "value_error") => ({ detail: [{ loc, msg, type }], message: `${loc.join(".")}: ${msg}` });

  it("a body that is not multipart → 415", async () => {
    const res = await api.post("/file/create", { project_id: project, file: "aGVsbG8=" });
    expect(await detail(res)).toEqual({
      status: 415,
      body: { detail: 'expected a multipart/form-data body with a file part named "file", got "application/json"', message: 'expected a multipart/form-data body with a file part named "file", got "application/json"' },
    });
  });

  it("no project_id, or project_id after the file → 422 at body.project_id", async () => {
    const missing = await postForm(url(), [["file", Buffer.from("x"), "x.bin"]]);
    expect(await detail(missing)).toEqual({ status: 422, body: issue(["body", "project_id"], "project_id is required and must come before the file part", "missing") });
    const late = await postForm(url(), [["file", Buffer.from("x"), "x.bin"], ["project_id", project]]);
    expect(await detail(late)).toEqual({ status: 422, body: issue(["body", "project_id"], "project_id is required and must come before the file part", "missing") });
  });

  it("a malformed project_id → 422", async () => {
    const res = await postForm(url(), [["project_id", "no-slash"], ["file", Buffer.from("x"), "x.bin"]]);
    expect(await detail(res)).toEqual({ status: 422, body: issue(["body", "project_id"], "must be <entity>/<project>") });
  });

  it("no file part → 422 at body.file", async () => {
    const res = await postForm(url(), [["project_id", project]]);
    expect(await detail(res)).toEqual({ status: 422, body: issue(["body", "file"], 'a file part named "file" is required', "missing") });
  });

  it("two file parts → 422, and the first one's chunks are dropped", async () => {
    const first = randomBytes(3 * CHUNK_BYTES);
    const res = await postForm(url(), [["project_id", project], ["file", first, "a.bin"], ["file", Buffer.from("second"), "b.bin"]]);
    expect(await detail(res)).toEqual({ status: 422, body: issue(["body", "file"], "exactly one file part is allowed") });
    expect((await readContent(service.url, project, fileDigest(first))).status).toBe(404);
  });

  it("a file part under another name → 422 naming it", async () => {
    const res = await postForm(url(), [["project_id", project], ["upload", Buffer.from("x"), "x.bin"]]);
    expect(await detail(res)).toEqual({ status: 422, body: issue(["body", "upload"], 'unexpected file part "upload": the file goes in the part named "file"') });
  });

  it("a multipart body without its closing boundary → 400", async () => {
    const body = `--b\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${project}\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\npartial`;
    const res = await fetch(url(), { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "multipart/form-data; boundary=b" }, body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^malformed multipart body: /);
  });

  it("a project the key may not reach → 403 as soon as project_id arrives: not one chunk of a 20 MiB upload is stored", async () => {
    const res = await streamUpload(service.url, "other/files", generatedContent(20 * CHUNK_BYTES, randomBytes(4096)));
    expect(res).toEqual({ status: 403, body: { detail: "this key may not reach project other/files", message: "this key may not reach project other/files" } });
    expect(await storedFor(service.database, "other/files")).toEqual({ files: 0, liveChunks: 0 });
    expect(await chunkRows("other/files")).toBe(0);
  });

  it("a multipart Content-Type without a boundary → 400", async () => {
    const res = await fetch(url(), { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "multipart/form-data" }, body: "x" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^malformed multipart body: /);
  });

  it("a client that goes away mid-upload leaves no file, and the chunks it had sent are dropped", async () => {
    const gone = "acme/files-gone";
    const req = request(url(), { method: "POST", agent: false, headers: { authorization: basic(KEY_ACME), "content-type": "multipart/form-data; boundary=b" } });
    req.on("error", () => undefined);
    req.write(`--b\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${gone}\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\n`);
    for (let i = 0; i < 9; i++) req.write(randomBytes(CHUNK_BYTES));
    expect(await eventually(() => chunkRows(gone), (n) => n >= 8)).toBeGreaterThanOrEqual(8);
    req.destroy();
    expect(await eventually(() => stored(gone), (s) => s.liveChunks === 0)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("after all of these, the project has no file and no live chunk", async () => {
    expect(await stats(project)).toEqual({ total_size_bytes: 0 });
    expect(await stored(project)).toEqual({ files: 0, liveChunks: 0 });
  });
});

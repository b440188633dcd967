import { describe, expect, it } from "vitest";
import { fileDigest, objectDigest } from "../../services/digests.js";
import { fromPlainJson } from "../../services/losslessJson.js";
import { imageFormatOf } from "../../services/query/imageFormat.js";
import { client, serviceForFile } from "../support/service.js";
import { postForm, readContent, storedFor, tinyGif, tinyJpeg, tinyPng, tinyWebp } from "./support.js";

const service = serviceForFile();
const P = "acme/images";


/** The ref /image/create answers: the object `Image` holding the image as Weave saves a PIL image. */
function expectedRef(project: string, fileName: string, digest: string): string {
  const val = { _type: "CustomWeaveType", weave_type: { type: "PIL.Image.Image" }, files: { [fileName]: digest } };
  return `weave:///${project}/object/Image:${objectDigest(fromPlainJson(val))}`;
}

describe("image/create", () => {
  it.each([
    ["PNG", tinyPng(), "image.png"],
    ["JPEG", tinyJpeg(), "image.jpg"],
    ["GIF", tinyGif(), "image.gif"],
    ["WebP", tinyWebp(), "image.webp"],
  ])("accepts a %s image: answers exactly {digest, ref} and the bytes read back unchanged", async (_format, image, fileName) => {
    const res = await postForm(`${service.url}/image/create`, [["project_id", P], ["file", image, "picture"]]);
    expect(res.status).toBe(200);
    const digest = fileDigest(image);
    expect(await res.json()).toEqual({ digest, ref: expectedRef(P, fileName, digest) });
    const back = await readContent(service.url, P, digest);
    expect({ status: back.status, type: back.type, same: back.bytes.equals(image) }).toEqual({ status: 200, type: "application/octet-stream", same: true });
    // The ref names a stored object: the image as Weave saves it, its file map pointing at the bytes.
    const objectDigestOfRef = expectedRef(P, fileName, digest).split(":").pop();
    const read = await client(service.url).json<{ obj: { object_id: string; digest: string; val: unknown } }>("/obj/read", { project_id: P, object_id: "Image", digest: objectDigestOfRef });
    expect(read.obj).toMatchObject({ object_id: "Image", digest: objectDigestOfRef, val: { _type: "CustomWeaveType", weave_type: { type: "PIL.Image.Image" }, files: { [fileName]: digest } } });
  });

  it("refuses content that is not one of the four formats with 415, whatever the part's declared type, and stores nothing", async () => {
    const project = "acme/images-refused";
    for (const content of [Buffer.from("just some text, not an image\n"), Buffer.alloc(0), Buffer.from("GIF8"), Buffer.from("RIFF\0\0\0\0WAVEfmt ")]) {
      const res = await postForm(`${service.url}/image/create`, [["project_id", project], ["file", content, "picture.png"]]);
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 415,
        body: { detail: "the uploaded file is not a PNG, JPEG, GIF or WebP image (judged by its first bytes); nothing was stored", message: "the uploaded file is not a PNG, JPEG, GIF or WebP image (judged by its first bytes); nothing was stored" },
      });
    }
    expect(await client(service.url).json("/files/query_stats", { project_id: project })).toEqual({ total_size_bytes: 0 });
    expect(await storedFor(service.database, project)).toEqual({ files: 0, liveChunks: 0 });
  });

  it("counts images in the project's files/query_stats", async () => {
    const project = "acme/images-stats";
    await postForm(`${service.url}/image/create`, [["project_id", project], ["file", tinyGif(), "a.gif"]]);
    expect(await client(service.url).json("/files/query_stats", { project_id: project })).toEqual({ total_size_bytes: tinyGif().length });
  });
});

describe("imageFormatOf", () => {
  it("tells the formats by their leading bytes only", () => {
    expect([tinyPng(), tinyJpeg(), tinyGif(), tinyWebp()].map(imageFormatOf)).toEqual(["png", "jpeg", "gif", "webp"]);
    expect(imageFormatOf(Buffer.from("GIF87a"))).toBe("gif");
    expect(imageFormatOf(tinyPng().subarray(0, 7))).toBeNull();
    expect(imageFormatOf(Buffer.from("RIFF\0\0\0\0WEBX"))).toBeNull();
    expect(imageFormatOf(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"))).toBeNull();
  });
});

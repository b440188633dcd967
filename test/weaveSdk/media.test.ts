import { describe, expect, it } from "vitest";
import { bytesDigest } from "../../services/digests.js";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, sdkProject, type FileBacked } from "./support.js";

/** The unmodified SDK's images and audio (scripts/media.ts): stored as files, named by digest in the values that hold them. */
const P = "acme/sdk-media";
const service = serviceForFile();

/** A 1×1 red PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");
/** A WAV header and four 16-bit mono samples. */
function wav(): Buffer {
  const samples = Buffer.from(new Int16Array([0, 1000, -1000, 0]).buffer);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + samples.length, 4);
  header.write("WAVEfmt ", 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36);
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}
const WAV = wav();

const fileBacked = (type: string, name: string, bytes: Buffer): FileBacked => ({
  _type: "CustomWeaveType",
  weave_type: { type },
  files: { [name]: bytesDigest(bytes) },
  load_op: "NO_LOAD_OP",
});

describe("the Weave TypeScript SDK: images and audio", () => {
  it("stores each file under its digest, and the calls and objects that hold them name it", async () => {
    const run = await runSdk<{ label: string; heard: string; posterRef: string }>("media", service.url, P, {
      env: { SDK_PNG_BASE64: PNG.toString("base64"), SDK_WAV_BASE64: WAV.toString("base64") },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.result).toMatchObject({ label: "one red dot", heard: `${WAV.length} bytes of wav` });

    const p = sdkProject(client(service.url), P);
    const calls = await p.calls();
    const [drawDot] = byOpName(calls, "drawDot");
    const [transcribe] = byOpName(calls, "transcribe");
    const image = fileBacked("PIL.Image.Image", "image.png", PNG);
    const audio = fileBacked("wave.Wave_read", "audio.wav", WAV);
    expect(drawDot).toMatchObject({ inputs: { arg0: "one red dot" }, output: { label: "one red dot", image } });
    expect(transcribe).toMatchObject({ inputs: { arg0: audio }, output: `${WAV.length} bytes of wav` });

    const poster = await p.readRef(run.result.posterRef);
    expect(poster).toMatchObject({ object_id: "poster", val: { title: "dot", picture: image } });

    expect(await p.fileBytes(bytesDigest(PNG))).toEqual(PNG);
    expect(await p.fileBytes(bytesDigest(WAV))).toEqual(WAV);
  });
});

import * as weave from "weave";

/** File-backed values: an image an op returns, an audio clip an op takes, and an image inside a published object. */
const PNG = Buffer.from(process.env.SDK_PNG_BASE64!, "base64");
const WAV = Buffer.from(process.env.SDK_WAV_BASE64!, "base64");

const drawDot = weave.op(async (label: string) => ({ label, image: weave.weaveImage({ data: PNG }) }), { name: "drawDot" });
const transcribe = weave.op(async (clip: weave.WeaveAudio) => `${clip.data.length} bytes of ${clip.audioType}`, { name: "transcribe" });

const client = await weave.init(process.env.WEAVE_PROJECT!);
const drawn = await drawDot("one red dot");
const heard = await transcribe(weave.weaveAudio({ data: WAV }));
const poster = await client.publish({ title: "dot", picture: weave.weaveImage({ data: PNG, imageType: "png" }) }, "poster");
await client.waitForBatchProcessing();
console.log(JSON.stringify({ label: drawn.label, heard, posterRef: poster.uri() }));

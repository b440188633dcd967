import type { Server } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyRing } from "../../services/auth/keys.js";
import { fileDigest } from "../../services/digests.js";
import { HttpApi } from "../../services/http/app.js";
import type { PlainJson } from "../../services/losslessJson.js";
import { mountFileRoutes } from "../../services/query/filesRoutes.js";
import { freshStore } from "../support/database.js";
import { KEY_ACME } from "../support/service.js";
import { postForm, tinyJpeg } from "./support.js";

/** With the objects resource wired in, /image/create stores the image object and its ref names that version. */
describe("image/create with an object writer", () => {
  const saved: { projectId: string; objectId: string; val: PlainJson }[] = [];
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const api = new HttpApi({ keys: new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }]), log: pino({ level: "silent" }), maxBodyBytes: 1024 * 1024 });
    mountFileRoutes(api, {
      store: await freshStore(),
      maxFileBytes: 1024 * 1024,
      objects: async (projectId, objectId, val) => {
        saved.push({ projectId, objectId, val });
        return "stored-object-digest";
      },
    });
    server = await api.listen(0, "127.0.0.1");
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  });
  afterAll(async () => {
    await new Promise((done) => server.close(done));
  });

  it("saves {_type: CustomWeaveType, weave_type: PIL.Image.Image, files} as object Image and answers the ref of the version saved", async () => {
    const image = tinyJpeg();
    const res = await postForm(`${url}/image/create`, [["project_id", "acme/pictures"], ["file", image, "photo.jpeg"]]);
    expect(await res.json()).toEqual({ digest: fileDigest(image), ref: "weave:///acme/pictures/object/Image:stored-object-digest" });
    expect(saved).toEqual([
      {
        projectId: "acme/pictures",
        objectId: "Image",
        val: { _type: "CustomWeaveType", weave_type: { type: "PIL.Image.Image" }, files: { "image.jpg": fileDigest(image) } },
      },
    ]);
  });
});

import { beforeAll, describe, expect, it } from "vitest";
import { basic, KEY_ACME, serviceForFile } from "../support/service.js";
import { objectsApi, putJson } from "./support.js";

/** Tags and aliases: add, remove, list, read through them, their names' rules. */
const P = "acme/labels";

const service = serviceForFile();
const api = service.api;
let o: ReturnType<typeof objectsApi>;
beforeAll(async () => {
  o = objectsApi(api, P);
});

const put = (path: string, body: unknown) => putJson(service.url, basic(KEY_ACME), path, body);
const post = async (path: string, body: unknown) => {
  const res = await api.post(path, body);
  return { status: res.status, body: (await res.json()) as unknown };
};
const list = async (what: "tags" | "aliases", project = P): Promise<unknown> => (await api.get(`/${what}?project_id=${encodeURIComponent(project)}`)).json();
const labelsOf = async (objectId: string, ref: string) => {
  const obj = await o.read(objectId, ref, { include_tags_and_aliases: true });
  return { tags: obj.tags, aliases: obj.aliases };
};

describe("tags", () => {
  it("adds tags to a version, lists them sorted by code point, removes them, and adds them again", async () => {
    const v0 = await o.create("tagged", { n: 0 });
    const v1 = await o.create("tagged", { n: 1 });
    expect(await put(`/objs/tagged/versions/${v0}/tags`, { project_id: P, tags: ["zeta", "Alpha", "needs review", "ß"] })).toEqual({ status: 200, body: {} });
    expect(await put("/objs/tagged/versions/latest/tags", { project_id: P, tags: ["zeta", "zeta"] })).toEqual({ status: 200, body: {} });
    expect(await labelsOf("tagged", v0)).toEqual({ tags: ["Alpha", "needs review", "zeta", "ß"], aliases: [] });
    expect(await labelsOf("tagged", v1)).toEqual({ tags: ["zeta"], aliases: ["latest"] });
    expect(await list("tags")).toEqual({ tags: ["Alpha", "needs review", "zeta", "ß"] });

    expect(await post(`/objs/tagged/versions/${v0}/tags/remove`, { project_id: P, tags: ["zeta", "Alpha", "never-there"] })).toEqual({ status: 200, body: {} });
    expect((await labelsOf("tagged", v0)).tags).toEqual(["needs review", "ß"]);
    expect(await list("tags")).toEqual({ tags: ["needs review", "zeta", "ß"] });
    expect((await put(`/objs/tagged/versions/${v0}/tags`, { project_id: P, tags: ["Alpha"] })).status).toBe(200);
    expect((await labelsOf("tagged", v0)).tags).toEqual(["Alpha", "needs review", "ß"]);
  });

  it("answers 404 when tagging a version that does not exist; removing from one removes nothing and answers 200", async () => {
    await o.create("tag404", { n: 0 });
    expect(await put("/objs/tag404/versions/nosuchdigest/tags", { project_id: P, tags: ["x"] })).toEqual({
      status: 404,
      body: {
        detail: `object "tag404" has no version "nosuchdigest" (a digest, latest, v<N> or an alias) in project ${P}`,
        message: `object "tag404" has no version "nosuchdigest" (a digest, latest, v<N> or an alias) in project ${P}`,
      },
    });
    expect((await put("/objs/nobody/versions/latest/tags", { project_id: P, tags: ["x"] })).status).toBe(404);
    expect(await post("/objs/nobody/versions/latest/tags/remove", { project_id: P, tags: ["x"] })).toEqual({ status: 200, body: {} });
    expect(((await list("tags")) as { tags: string[] }).tags).not.toContain("x");
  });

  it("refuses bad tag names with 422 and writes nothing", async () => {
    const v = await o.create("tagrules", { n: 0 });
    for (const tag of ["", " lead", "trail ", "two  spaces", "a/b", "tab\there", "x".repeat(257), "emoji🙂"]) {
      const res = await put(`/objs/tagrules/versions/${v}/tags`, { project_id: P, tags: [tag] });
      expect(res.status, JSON.stringify(tag)).toBe(422);
      expect((res.body as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "tags", 0]);
    }
    expect((await put(`/objs/tagrules/versions/${v}/tags`, { project_id: P, tags: [] })).status).toBe(422);
    expect((await put(`/objs/tagrules/versions/${v}/tags`, { project_id: P, tags: ["x".repeat(256), "ok_tag-1 two"] })).status).toBe(200);
  });
});

describe("aliases", () => {
  it("points an alias at one version at a time: set, read through it, move it, remove it", async () => {
    const v0 = await o.create("aliased", { n: 0 });
    const v1 = await o.create("aliased", { n: 1 });
    expect(await put("/objs/aliased/aliases", { project_id: P, digest: v0, aliases: ["prod", "best"] })).toEqual({ status: 200, body: {} });
    expect((await o.read("aliased", "prod")).digest).toBe(v0);
    expect(await labelsOf("aliased", v0)).toEqual({ tags: [], aliases: ["best", "prod"] });

    expect((await put("/objs/aliased/aliases", { project_id: P, digest: "v1", aliases: ["prod"] })).status).toBe(200);
    expect((await o.read("aliased", "prod")).digest).toBe(v1);
    expect((await o.read("aliased", "best")).digest).toBe(v0);
    expect(await labelsOf("aliased", v0)).toEqual({ tags: [], aliases: ["best"] });
    expect(await labelsOf("aliased", v1)).toEqual({ tags: [], aliases: ["latest", "prod"] });
    expect(await list("aliases")).toEqual({ aliases: ["best", "latest", "prod"] });

    expect(await post("/objs/aliased/aliases/remove", { project_id: P, aliases: ["prod", "unknown"] })).toEqual({ status: 200, body: {} });
    expect((await o.readStatus("aliased", "prod")).status).toBe(404);
    expect(await list("aliases")).toEqual({ aliases: ["best", "latest"] });
    expect((await put("/objs/aliased/aliases", { project_id: P, digest: v0, aliases: ["prod"] })).status).toBe(200);
    expect((await o.read("aliased", "prod")).digest).toBe(v0);
  });

  it("an alias belongs to its object: the same name on two objects names two versions", async () => {
    const a = await o.create("alias-a", { a: 1 });
    const b = await o.create("alias-b", { b: 1 });
    await put("/objs/alias-a/aliases", { project_id: P, digest: a, aliases: ["shared"] });
    await put("/objs/alias-b/aliases", { project_id: P, digest: b, aliases: ["shared"] });
    expect((await o.read("alias-a", "shared")).digest).toBe(a);
    expect((await o.read("alias-b", "shared")).digest).toBe(b);
  });

  it("answers 404 when the version to alias does not exist", async () => {
    await o.create("alias404", { n: 0 });
    expect((await put("/objs/alias404/aliases", { project_id: P, digest: "v7", aliases: ["x"] })).status).toBe(404);
    expect((await put("/objs/nobody/aliases", { project_id: P, digest: "latest", aliases: ["x"] })).status).toBe(404);
  });

  it("refuses reserved and malformed alias names with 422", async () => {
    const v = await o.create("aliasrules", { n: 0 });
    for (const alias of ["latest", "v0", "v12", "", "   ", "a/b", "a:b", "new\nline", "x".repeat(129)]) {
      const res = await put("/objs/aliasrules/aliases", { project_id: P, digest: v, aliases: [alias] });
      expect(res.status, JSON.stringify(alias)).toBe(422);
      expect((res.body as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "aliases", 0]);
      expect((await post("/objs/aliasrules/aliases/remove", { project_id: P, aliases: [alias] })).status).toBe(422);
    }
    expect((await put("/objs/aliasrules/aliases", { project_id: P, digest: v, aliases: ["release 1.0 (rc)", "vNext", "ünï", "x".repeat(128)] })).status).toBe(200);
    expect((await o.read("aliasrules", "release 1.0 (rc)")).digest).toBe(v);
  });

  it("an exact digest wins over an alias written the same", async () => {
    const v0 = await o.create("digestwins", { n: 0 });
    const v1 = await o.create("digestwins", { n: 1 });
    expect((await put("/objs/digestwins/aliases", { project_id: P, digest: v1, aliases: [v0] })).status).toBe(200);
    expect((await o.read("digestwins", v0)).digest).toBe(v0);
  });
});

describe("deletion", () => {
  it("removes the tags and aliases of deleted versions; restoring the value does not bring them back", async () => {
    const v0 = await o.create("labels-del", { n: 0 });
    await o.create("labels-del", { n: 1 });
    await put(`/objs/labels-del/versions/${v0}/tags`, { project_id: P, tags: ["doomed"] });
    await put("/objs/labels-del/aliases", { project_id: P, digest: v0, aliases: ["doomed-alias"] });
    expect(((await list("tags")) as { tags: string[] }).tags).toContain("doomed");
    expect(await (await o.remove("labels-del", [v0])).json()).toEqual({ num_deleted: 1 });
    expect(((await list("tags")) as { tags: string[] }).tags).not.toContain("doomed");
    expect(((await list("aliases")) as { aliases: string[] }).aliases).not.toContain("doomed-alias");
    expect((await o.readStatus("labels-del", "doomed-alias")).status).toBe(404);
    await o.create("labels-del", { n: 0 });
    expect(await labelsOf("labels-del", v0)).toEqual({ tags: [], aliases: [] });
  });

  it("lists nothing, latest included, for a project without live objects", async () => {
    expect(await list("tags", "acme/empty")).toEqual({ tags: [] });
    expect(await list("aliases", "acme/empty")).toEqual({ aliases: [] });
  });
});

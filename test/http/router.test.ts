import { describe, expect, it } from "vitest";
import { Router } from "../../services/http/router.js";

/** The router's matching rules: the ones clients saw when Express's router answered. */
describe("Router", () => {
  const router = new Router<string>();
  router.add("post", "/call/start", "start");
  router.add("post", "/call/start", "second");
  router.add("put", "/objs/{object_id}/versions/{digest}/tags", "tags");
  router.add("get", "/objs/{object_id}", "object");
  router.add("get", "/ui/{*rest}", "ui");

  it("finds a path without parameters exactly, the first route added winning", () => {
    expect(router.find("POST", "/call/start")).toEqual({ route: "start", params: {} });
  });

  it("matches regardless of case and with one trailing slash", () => {
    expect(router.find("POST", "/CALL/Start/")?.route).toBe("start");
    expect(router.find("POST", "/call/start//")).toBeNull();
  });

  it("answers a HEAD with the GET route, and no other method with another's", () => {
    expect(router.find("HEAD", "/objs/a")?.route).toBe("object");
    expect(router.find("GET", "/call/start")).toBeNull();
    expect(router.find("OPTIONS", "/call/start")).toBeNull();
  });

  it("hands each parameter decoded, one segment each", () => {
    expect(router.find("PUT", "/objs/my%2Fobj/versions/abc/tags")).toEqual({ route: "tags", params: { object_id: "my/obj", digest: "abc" } });
    expect(router.find("GET", "/objs/a/b")).toBeNull();
    expect(router.find("GET", "/objs/")).toBeNull();
  });

  it("takes the rest of a path, slashes included, possibly empty", () => {
    expect(router.find("GET", "/ui/a/b.js")).toEqual({ route: "ui", params: { rest: "a/b.js" } });
    expect(router.find("GET", "/ui/")?.route).toBe("ui");
    expect(router.find("GET", "/ui")).toBeNull();
  });

  it("refuses a broken escape in a matched parameter with a 400, whatever the method", () => {
    for (const method of ["GET", "POST"]) expect(() => router.find(method, "/objs/%zz")).toThrow(expect.objectContaining({ status: 400, message: "Failed to decode param '%zz'" }));
  });
});

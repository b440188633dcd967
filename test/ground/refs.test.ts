import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatRef, isRefString, parseRef, projectIdOf, type RefEdge, type WeaveRef } from "../../services/refs.js";
import { RefParseError } from "../../services/errors.js";

describe("parseRef", () => {
  it("reads an object ref with a path into a table row", () => {
    expect(parseRef("weave:///acme/evals/object/ds:abc/attr/rows/id/Qf7PtO7LOmJhnRvTrOPu786gRYJ7rwZZ3ZZ6lmEMSdE")).toEqual({
      kind: "object",
      entity: "acme",
      project: "evals",
      name: "ds",
      digest: "abc",
      extra: [
        { edge: "attr", value: "rows" },
        { edge: "id", value: "Qf7PtO7LOmJhnRvTrOPu786gRYJ7rwZZ3ZZ6lmEMSdE" },
      ],
    });
  });

  it("reads op, table and call refs", () => {
    expect(parseRef("weave:///e/p/op/my_op:v1digest")).toEqual({ kind: "op", entity: "e", project: "p", name: "my_op", digest: "v1digest", extra: [] });
    expect(parseRef("weave:///e/p/table/3e32a4/index/2/key/a")).toEqual({
      kind: "table",
      entity: "e",
      project: "p",
      digest: "3e32a4",
      extra: [
        { edge: "index", value: "2" },
        { edge: "key", value: "a" },
      ],
    });
    expect(parseRef("weave:///e/p/call/0195-abc")).toEqual({ kind: "call", entity: "e", project: "p", callId: "0195-abc", extra: [] });
  });

  it("decodes percent-escapes in names and path values", () => {
    const ref = parseRef("weave:///e/p/object/a%2Fb%3Ac%25d%20%C3%A9:dig/key/x%2Fy/key/");
    expect(ref).toMatchObject({ name: "a/b:c%d é", digest: "dig", extra: [{ edge: "key", value: "x/y" }, { edge: "key", value: "" }] });
  });

  it.each([
    ["http://e/p/object/a:b", /must start with weave:\/\/\//],
    ["weave:///e/p", /<kind>\/<id>/],
    ["weave:////p/call/x", /entity and project must not be empty/],
    ["weave:///e/p/thing/x", /unknown kind "thing"/],
    ["weave:///e/p/object/name", /<name>:<digest>/],
    ["weave:///e/p/object/a:b:c", /<name>:<digest>/],
    ["weave:///e/p/object/:abc", /the name must not be empty/],
    ["weave:///e/p/op/name:", /the digest must not be empty/],
    ["weave:///e/p/call/", /the call id must not be empty/],
    ["weave:///e/p/object/a:b/attr", /pairs/],
    ["weave:///e/p/object/a:b/field/x", /unknown path edge "field"/],
    ["weave:///e/p/object/a%zz:b", /bad percent-encoding in the name/],
    ["weave:///e/p/table/abc/key/%E9", /bad percent-encoding in the key value/],
  ])("refuses %s", (text, reason) => {
    expect(() => parseRef(text)).toThrow(RefParseError);
    expect(() => parseRef(text)).toThrow(reason);
    expect(isRefString(text)).toBe(false);
  });

  it("names the ref in the error", () => {
    expect(() => parseRef("weave:///e/p/nope/x")).toThrow('invalid weave ref "weave:///e/p/nope/x": unknown kind "nope"');
  });
});

describe("formatRef", () => {
  it("percent-encodes /, : and % and nothing else", () => {
    const ref: WeaveRef = { kind: "object", entity: "e", project: "p", name: "a/b:c%d é?#", digest: "x:y", extra: [{ edge: "attr", value: "r/s" }] };
    expect(formatRef(ref)).toBe("weave:///e/p/object/a%2Fb%3Ac%25d é?#:x%3Ay/attr/r%2Fs");
  });

  it("writes each kind", () => {
    expect(formatRef({ kind: "call", entity: "e", project: "p", callId: "c1", extra: [] })).toBe("weave:///e/p/call/c1");
    expect(formatRef({ kind: "table", entity: "e", project: "p", digest: "d", extra: [{ edge: "index", value: "0" }] })).toBe("weave:///e/p/table/d/index/0");
    expect(formatRef({ kind: "op", entity: "e", project: "p", name: "f", digest: "d", extra: [] })).toBe("weave:///e/p/op/f:d");
  });

  it("refuses what cannot be written", () => {
    expect(() => formatRef({ kind: "call", entity: "e/x", project: "p", callId: "c", extra: [] })).toThrow(RefParseError);
    expect(() => formatRef({ kind: "call", entity: "e", project: "", callId: "c", extra: [] })).toThrow(RefParseError);
    expect(() => formatRef({ kind: "object", entity: "e", project: "p", name: "", digest: "d", extra: [] })).toThrow(/the name must not be empty/);
    const badEdge = [{ edge: "field" as RefEdge, value: "x" }];
    expect(() => formatRef({ kind: "table", entity: "e", project: "p", digest: "d", extra: badEdge })).toThrow(/unknown path edge/);
  });
});

describe("projectIdOf and isRefString", () => {
  it("gives entity/project", () => {
    expect(projectIdOf(parseRef("weave:///acme/evals/call/c"))).toBe("acme/evals");
  });

  it("is true only for well-formed refs", () => {
    expect(isRefString("weave:///e/p/object/a:b")).toBe(true);
    expect(isRefString("weave:///e/p/object/a")).toBe(false);
    expect(isRefString("not a ref")).toBe(false);
    expect(isRefString(42)).toBe(false);
  });
});

describe("formatRef and parseRef round trip", () => {
  const char = fc.oneof(fc.constantFrom("/", ":", "%", "%2F", "é", "😀", " ", "?", "#"), fc.string({ unit: "binary", minLength: 1, maxLength: 1 }));
  const name = fc.string({ unit: char, minLength: 1, maxLength: 12 });
  const plainName = fc.stringMatching(/^[A-Za-z0-9_.-]{1,12}$/);
  const extra = fc.array(
    fc.record({ edge: fc.constantFrom<RefEdge>("key", "index", "attr", "id"), value: fc.string({ unit: char, maxLength: 8 }) }),
    { maxLength: 4 },
  );
  const ref: fc.Arbitrary<WeaveRef> = fc.oneof(
    fc.record({ kind: fc.constantFrom("object" as const, "op" as const), entity: plainName, project: plainName, name, digest: name, extra }),
    fc.record({ kind: fc.constant("table" as const), entity: plainName, project: plainName, digest: name, extra }),
    fc.record({ kind: fc.constant("call" as const), entity: plainName, project: plainName, callId: name, extra }),
  );

  it("parseRef(formatRef(ref)) is ref, and the text is a ref string", () => {
    fc.assert(
      fc.property(ref, (r) => {
        const text = formatRef(r);
        expect(parseRef(text)).toEqual(r);
        expect(isRefString(text)).toBe(true);
        expect(formatRef(parseRef(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });
});

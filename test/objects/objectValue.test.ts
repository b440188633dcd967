import { describe, expect, it } from "vitest";
import { objectDigest } from "../../services/digests.js";
import { ValidationError } from "../../services/errors.js";
import { parseLossless, stringifyLossless } from "../../services/losslessJson.js";
import { objectClasses, prepareObject } from "../../services/store/objects/objectValue.js";

/** What /obj/create derives from a value, without the database. */
const prepared = (text: string, builtin: string | null = null) => prepareObject(parseLossless(text), builtin);

describe("prepareObject", () => {
  it("digests the value as Python's json.dumps(sort_keys=True) writes it and keeps the key order in its text", () => {
    const p = prepared('{"b": 1.0, "a": [10000000000000000000001, "\\u00e9"]}');
    expect(p.digest).toBe(objectDigest(parseLossless('{"a": [10000000000000000000001, "é"], "b": 1.0}')));
    expect(p.valText).toBe('{"b":1.0,"a":[10000000000000000000001,"é"]}');
    expect(p.sizeBytes).toBe('{"a": [10000000000000000000001, "\\u00e9"], "b": 1.0}'.length);
    expect([p.kind, p.baseObjectClass, p.leafObjectClass]).toEqual(["object", null, null]);
  });

  it("finds ops by _type, or by weave_type.type when both are there", () => {
    expect(prepared('{"_type": "Op"}').kind).toBe("op");
    expect(prepared('{"_type": "X", "weave_type": {"type": "Op"}}').kind).toBe("op");
    expect(prepared('{"_type": "Op", "weave_type": "Op"}').kind).toBe("object");
    expect(prepared('{"type": "Op"}').kind).toBe("object");
    expect(prepared('["Op"]').kind).toBe("object");
  });

  it("reads classes only from a Weave object hierarchy", () => {
    const classes = (text: string) => objectClasses(parseLossless(text));
    expect(classes('{"_class_name": "E", "_bases": ["Evaluation", "Object", "BaseModel"]}')).toEqual({ leaf: "E", base: "Evaluation" });
    expect(classes('{"_class_name": "E", "_bases": ["Object", "BaseModel"]}')).toEqual({ leaf: "E", base: "E" });
    expect(classes('{"_bases": ["Object", "BaseModel"]}')).toEqual({ leaf: null, base: null });
    expect(classes('{"_class_name": "E", "_bases": ["Object", "Other"]}')).toBeNull();
    expect(classes('{"_class_name": "E", "_bases": "Object"}')).toBeNull();
    expect(classes("[1]")).toBeNull();
  });

  it("marks a dict with builtin_object_class; keeps a value already of that class; refuses another class or a non-dict", () => {
    const marked = prepared('{"columns": [], "_type": "old", "description": "d"}', "Leaderboard");
    expect(stringifyLossless(marked.val)).toBe(
      '{"_type":"Leaderboard","name":null,"description":"d","columns":[],"_class_name":"Leaderboard","_bases":["BaseObject","BaseModel"]}',
    );
    expect([marked.baseObjectClass, marked.leafObjectClass]).toEqual(["Leaderboard", "Leaderboard"]);
    expect(prepared(stringifyLossless(marked.val), "Leaderboard").digest).toBe(marked.digest);
    expect(() => prepared('{"_class_name": "A", "_bases": ["Object", "BaseModel"]}', "B")).toThrow(ValidationError);
    expect(() => prepared("3", "B")).toThrow(ValidationError);
  });
});

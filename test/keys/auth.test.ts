import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canReach, KeyRing, localKeys, roleIn, secretDigest } from "../../services/auth/keys.js";

describe("keys", () => {
  it("generates a local key once, private to the owner, and reuses it", () => {
    const dir = mkdtempSync(join(tmpdir(), "keys-"));
    const first = localKeys(dir);
    expect(first.created).toBe(true);
    expect(first.keys[0]).toMatchObject({ username: "local", entities: ["*"] });
    expect(statSync(join(dir, "local-api-key.json")).mode & 0o777).toBe(0o600);
    const second = localKeys(dir);
    expect(second.created).toBe(false);
    expect(second.keys[0]!.key).toBe(first.keys[0]!.key);
  });

  it("finds the key's user and scopes it to its entities", () => {
    const ring = new KeyRing([
      { key: "a".repeat(20), username: "alice", entities: ["acme"] },
      { key: "b".repeat(20), username: "root", entities: ["*"] },
    ]);
    const alice = ring.find("a".repeat(20))!;
    expect(alice.username).toBe("alice");
    expect(canReach(alice, "acme/x")).toBe(true);
    expect(canReach(alice, "other/x")).toBe(false);
    expect(canReach(ring.find("b".repeat(20))!, "other/x")).toBe(true);
    expect(ring.find("a".repeat(19))).toBeNull();
  });

  it("gives configured keys their role (admin when none is named) in each of their entities", () => {
    const ring = new KeyRing([
      { key: "a".repeat(20), username: "alice", entities: ["acme", "beta"] },
      { key: "v".repeat(20), username: "viewer", entities: ["*"], role: "viewer" },
    ]);
    const alice = ring.find("a".repeat(20))!;
    expect([roleIn(alice, "acme/x"), roleIn(alice, "beta"), roleIn(alice, "other/x")]).toEqual(["admin", "admin", null]);
    const viewer = ring.find("v".repeat(20))!;
    expect([canReach(viewer, "any/x"), canReach(viewer, "any/x", "writer")]).toEqual([true, false]);
  });

  it("takes stored keys from a reload unless this process changed them since the reload began", () => {
    const ring = new KeyRing([]);
    const stored = (id: string, secret: string) => ({ id, entity: "acme", role: "viewer" as const, name: id, secretSha256: secretDigest(secret).toString("hex") });
    const mark = ring.mark();
    ring.add(stored("k1", "s".repeat(40)));
    ring.replaceStored([], mark); // read before k1 was made: ignored
    expect(ring.find("s".repeat(40))?.keyId).toBe("k1");
    ring.replaceStored([stored("k2", "t".repeat(40))], ring.mark());
    expect(ring.find("s".repeat(40))).toBeNull();
    expect(ring.find("t".repeat(40))?.keyId).toBe("k2");
    expect([...ring.takeUses().keys()]).toEqual(["k1", "k2"]);
    ring.remove("k2");
    expect(ring.find("t".repeat(40))).toBeNull();
  });
});

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { CONFIG_VARIABLES, EnvVariables, OTHER_VARIABLES, REMOVED_VARIABLES } from "../../services/config.js";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../../scripts/configDoc.js";

describe("docs/configuration.md", () => {
  it("gives every variable the service reads a description in services/config.ts", () => {
    const undescribed = Object.entries(EnvVariables.shape)
      .filter(([, schema]) => !(schema as z.ZodType).description?.trim())
      .map(([name]) => name);
    expect(undescribed).toEqual([]);
  });

  it("is what scripts/configDoc.ts renders from services/config.ts (run `npx tsx scripts/configDoc.ts`)", () => {
    expect(readFileSync(CONFIGURATION_DOC, "utf8")).toBe(renderConfigurationDoc());
  });

  it("names every variable read and every variable removed", () => {
    const doc = renderConfigurationDoc();
    for (const name of [...CONFIG_VARIABLES, ...Object.keys(OTHER_VARIABLES), ...Object.keys(REMOVED_VARIABLES)]) expect(doc).toContain(`\`${name}\``);
  });

  it("knows every environment variable services/ reads", () => {
    const services = fileURLToPath(new URL("../../services/", import.meta.url));
    const files = readdirSync(services, { recursive: true, encoding: "utf8" }).filter((f) => /\.(ts|mjs)$/.test(f));
    const read = new Set<string>();
    for (const file of files) {
      for (const m of readFileSync(join(services, file), "utf8").matchAll(/process\.env(?:\.([A-Z_][A-Z0-9_]*)|\[\s*["']([A-Z_][A-Z0-9_]*)["']\s*\])/g)) read.add((m[1] ?? m[2])!);
    }
    expect(read.size).toBeGreaterThan(0);
    expect([...read].filter((name) => !CONFIG_VARIABLES.includes(name) && !(name in OTHER_VARIABLES)).sort()).toEqual([]);
  });
});

import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * node's flags in `make start`, the one definition the other ways to start the service follow:
 * the benches start it with them (bench/support.ts), and test/deploy checks that the image and
 * `npm start` give the same.
 */
export function nodeFlagsOf(command: string): string[] {
  const found = command.match(/node ((?:--\S+ )*)build\/services\/main\.js/);
  if (!found) throw new Error("no `node … build/services/main.js` in the command");
  return found[1]!.trim().split(" ").filter(Boolean);
}

export const makeStartFlags = (root: string): string[] => nodeFlagsOf(readFileSync(join(root, "Makefile"), "utf8"));

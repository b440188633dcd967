import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FOLDERS = ["services", "ui/src", "bench", "scripts", "test"];
const SCRIPT = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;

/**
 * A repository file path in a comment: at least one folder, then a file with an extension
 * of the repository's files. Not part of a longer path, a URL, a glob or a placeholder
 * (`store/<resource>/schema.ts` names no file).
 */
const PATH = /(?<![\w./<>*{}@:$~\\-])(?:\.\.?\/)*(?:[\w.-]+\/)+[\w.-]+\.(?:ts|tsx|js|mjs|cjs|md|json|sh|proto|ya?ml|sql|html|css|cjs)(?![\w/<>*{}-])/g;

/**
 * Named by comments but not files of the checkout: the interface specs beside the repository
 * (`shared/spec/…`), and what a run writes into ignored folders (bench/out/, test-output/).
 */
const BESIDE = /^(shared|bench\/out|test-output)\//;

/** Where a path in a comment may be relative to: the repository, services/, the file's folder, ui/src. */
const bases = (file: string) => [ROOT, join(ROOT, "services"), dirname(join(ROOT, file)), join(ROOT, "ui/src")];

function filesUnder(folder: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, folder), { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const path = join(folder, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (SCRIPT.test(entry.name) || entry.name.endsWith(".sh")) out.push(path);
  }
  return out;
}

/** Every comment of a script (as TypeScript reads it: never a `//` inside a string or a regular expression), with its line. */
function scriptComments(text: string, file: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith("x") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const seen = new Map<number, { line: number; text: string }>();
  const collect = (ranges: readonly ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (!seen.has(r.pos)) seen.set(r.pos, { line: source.getLineAndCharacterOfPosition(r.pos).line + 1, text: text.slice(r.pos, r.end) });
    }
  };
  // Every comment is trivia before some token: before a node's first, or after a node's end
  // (then before the token that follows it, such as a block's closing brace).
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getLeadingCommentRanges(text, node.end));
    collect(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  collect(ts.getLeadingCommentRanges(text, 0));
  visit(source);
  return [...seen.values()];
}

/** The `#` comments of a shell script. */
function shellComments(text: string): { line: number; text: string }[] {
  return text
    .split("\n")
    .map((line, i) => ({ line: i + 1, text: line.trimStart() }))
    .filter((c) => c.text.startsWith("#") && !c.text.startsWith("#!"));
}

/** Whether a path named in `file`'s comments exists from one of its bases (a `.js` path also as the `.ts` or `.tsx` it is compiled from). */
function exists(path: string, file: string): boolean {
  const names = path.endsWith(".js") ? [path, path.replace(/\.js$/, ".ts"), path.replace(/\.js$/, ".tsx")] : [path];
  return bases(file).some((base) => names.some((name) => existsSync(join(base, name))));
}

/** The paths named in comments of `files` that exist from none of their bases, as `file:line path`. */
export function missingCommentPaths(files: readonly string[], read = (file: string) => readFileSync(join(ROOT, file), "utf8")): string[] {
  const missing: string[] = [];
  for (const file of files) {
    const text = read(file);
    // Only a file that names a missing path somewhere (comment, string or code) is parsed for its comments.
    if (![...text.matchAll(PATH)].some(([path]) => !BESIDE.test(path) && !exists(path, file))) continue;
    const comments = file.endsWith(".sh") ? shellComments(text) : scriptComments(text, file);
    for (const comment of comments) {
      for (const [path] of comment.text.matchAll(PATH)) {
        if (!BESIDE.test(path) && !exists(path, file)) missing.push(`${file}:${comment.line} ${path}`);
      }
    }
  }
  return missing;
}

describe("repository paths named in comments", () => {
  it.each(FOLDERS)("every path a comment under %s/ names exists", (folder) => {
    expect(missingCommentPaths(filesUnder(folder))).toEqual([]);
  });

  it("finds a path that does not exist, in a line comment, a block comment and a shell comment, and none in strings", () => {
    const files: Record<string, string> = {
      "services/queue/fake.ts": [
        "// the topic: queue/topic.ts; the spec: shared/spec/interface.md",
        "/** Kept in store/calls/callRows.ts and docs/nowhere.md. */",
        'const url = "// not/a/comment.ts";',
        "const re = /\\/\\/ also/g; // events.ts is beside it: ./events.ts",
        "function f() {",
        "  return 1;",
        "  // last in its block: bench/gone.bench.ts",
        "}",
      ].join("\n"),
      "scripts/fake.sh": "#!/bin/sh\n# runs bench/missing.bench.ts\necho scripts/nothing.ts\n",
    };
    expect(missingCommentPaths(Object.keys(files), (file) => files[file]!)).toEqual([
      "services/queue/fake.ts:1 queue/topic.ts",
      "services/queue/fake.ts:2 docs/nowhere.md",
      "services/queue/fake.ts:7 bench/gone.bench.ts",
      "scripts/fake.sh:2 bench/missing.bench.ts",
    ]);
  });

  it("reads the paths relative to the repository, services/, the file's folder and ui/src", () => {
    const text = "// docs/architecture.md, store/sql.ts, ./queue.ts, ../errors.ts, components/nowhere.tsx";
    expect(missingCommentPaths(["services/queue/fake.ts"], () => text)).toEqual(["services/queue/fake.ts:1 components/nowhere.tsx"]);
  });
});

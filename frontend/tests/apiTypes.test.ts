// schema.d.ts must be what openapi-typescript makes of openapi.json (`make api-types`), so
// that tsc checks every API call against the schema the backend serves.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import openapiTS, { astToString } from "openapi-typescript";

const here = dirname(fileURLToPath(import.meta.url));

function body(text: string): string {
  return text.replace(/^\/\*\*[\s\S]*?\*\/\s*/, "").trim();
}

test("the API types are generated from the schema copy", async () => {
  const schema = JSON.parse(readFileSync(resolve(here, "../src/api/openapi.json"), "utf8"));
  const generated = astToString(await openapiTS(schema));
  const committed = readFileSync(resolve(here, "../src/api/schema.d.ts"), "utf8");
  expect(body(committed)).toBe(body(generated));
});

// schema.d.ts must be what openapi-typescript makes of openapi.json, and messages.d.ts what
// it makes of messages.json (`make api-types`), so that tsc checks every API call against
// the schema the backend serves, and every WebSocket message against the server's schemas.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import openapiTS, { astToString, type OpenAPI3 } from "openapi-typescript";

const here = dirname(fileURLToPath(import.meta.url));

function body(text: string): string {
  return text.replace(/^\/\*\*[\s\S]*?\*\/\s*/, "").trim();
}

async function generatedFrom(json: string): Promise<string> {
  const schema = JSON.parse(readFileSync(resolve(here, "../src/api", json), "utf8")) as OpenAPI3;
  return astToString(await openapiTS(schema));
}

test("the API types are generated from the schema copy", async () => {
  const committed = readFileSync(resolve(here, "../src/api/schema.d.ts"), "utf8");
  expect(body(committed)).toBe(body(await generatedFrom("openapi.json")));
});

test("the WebSocket messages' types are generated from their schemas' copy", async () => {
  const committed = readFileSync(resolve(here, "../src/api/messages.d.ts"), "utf8");
  expect(body(committed)).toBe(body(await generatedFrom("messages.json")));
});

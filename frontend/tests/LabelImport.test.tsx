// Importing preference pairs from a JSONL file on the Label page: the file goes as it is,
// a refused file names each bad line (and nothing is imported), a good one says what came in.
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, expect, it, vi } from "vitest";

import { RequireRole } from "../src/auth";
import LabelPage from "../src/pages/Label";
import { renderAt, reply, stubFetch } from "./support";

const GOOD = '{"prompt": "2+2?", "chosen": "4", "rejected": "5", "source": "human"}\n';
const BAD = `${GOOD}not json\n${GOOD}{"prompt": "3+3?", "rejected": "7", "source": "human"}\n`;

function fakeServer() {
  const uploads: unknown[] = [];
  const mock = stubFetch(({ url, method, body }) => {
    if (url === "/api/auth/me")
      return reply(200, { id: 1, username: "rita", email: "", role: "researcher", is_staff: false });
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url.startsWith("/api/preferences/pairs")) return reply(200, { items: [], count: 0 });
    if (url === "/api/preferences/import" && method === "POST") {
      uploads.push(body);
      if (body === BAD) {
        const errors = [
          { line: 4, message: '"chosen" is missing' },
          { line: 2, message: "not valid JSON (Expecting value)" },
        ];
        return reply(422, { detail: "2 invalid lines: line 2: ...; line 4: ...", errors });
      }
      return reply(201, { pairs: 1, tasks: 1, runs: 2, by_source: { human: 1 } });
    }
    return reply(404, { detail: `unexpected ${method} ${url}` });
  });
  return { uploads, mock };
}

beforeEach(() => {
  document.cookie = "csrftoken=test-token";
});
afterEach(() => vi.unstubAllGlobals());

function renderExportTab() {
  return renderAt(
    "/label?tab=export",
    <RequireRole needs="labeler">
      <LabelPage />
    </RequireRole>,
  );
}

it("names every bad line of a refused file, in line order, and says nothing was imported", async () => {
  const user = userEvent.setup();
  const { uploads, mock } = fakeServer();
  renderExportTab();
  await user.upload(await screen.findByLabelText("JSONL file"), new File([BAD], "prefs.jsonl", { type: "" }));
  await user.click(screen.getByRole("button", { name: "Import" }));

  const errors = await screen.findByTestId("import-errors");
  expect(errors.textContent).toContain("Nothing was imported: 2 bad lines in prefs.jsonl.");
  const lines = [...errors.querySelectorAll("li")].map((li) => li.textContent);
  expect(lines).toEqual(["Line 2: not valid JSON (Expecting value)", 'Line 4: "chosen" is missing']);
  expect(uploads).toEqual([BAD]); // the file, as it is
  const init = mock.mock.calls.find(([url]) => url === "/api/preferences/import")?.[1];
  expect((init?.headers as Record<string, string>)["Content-Type"]).toBe("application/x-ndjson");
  expect(screen.queryByTestId("import-result")).toBeNull();
});

it("says what a good file brought in", async () => {
  const user = userEvent.setup();
  fakeServer();
  renderExportTab();
  const input = await screen.findByLabelText("JSONL file");
  expect(screen.getByRole<HTMLButtonElement>("button", { name: "Import" }).disabled).toBe(true); // no file yet
  await user.upload(input, new File([GOOD], "one.jsonl"));
  await user.click(screen.getByRole("button", { name: "Import" }));
  expect((await screen.findByTestId("import-result")).textContent).toBe(
    "✓ Imported 1 pair (1 human): 1 tasks and 2 runs.",
  );
  await waitFor(() => expect(screen.queryByTestId("import-errors")).toBeNull());
});

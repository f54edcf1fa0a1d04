import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import { RequireRole } from "../src/auth";
import { parseTaskIds, poolPairs } from "../src/lib/collections";
import CollectionsPage, { POLL_MS } from "../src/pages/Collections";
import { renderAt, reply, stubFetch, type FakeRequest } from "./support";

type Cells = { total: number; pending: number; started: number; recorded: number; failed: number };

function collection(id: number, status: string, cells: Partial<Cells> = {}, more: Record<string, unknown> = {}) {
  return {
    id,
    name: `probe ${id}`,
    source: `collection-${id}`,
    status,
    pool_id: 1,
    pool_name: "prod",
    budget_usd: 1,
    spent_usd: 0.18,
    max_concurrency: 4,
    calibrates: false,
    message: "",
    cells: { total: 12, pending: 0, started: 0, recorded: 0, failed: 0, ...cells },
    created_at: "2026-01-01T00:00:00Z",
    started_at: null,
    finished_at: null,
    ...more,
  };
}

const ENDPOINTS = [
  { id: 10, pool_id: 1, name: "right", model: "openai/right", enabled: true },
  { id: 11, pool_id: 1, name: "wrong", model: "openai/wrong", enabled: true },
  { id: 12, pool_id: 1, name: "off", model: "openai/off", enabled: false },
];
const ADMISSIBLE = [
  { id: 1, endpoint_id: 10, primitive_id: 1, primitive_name: "direct", allowed: true, limits: {} },
  { id: 2, endpoint_id: 11, primitive_id: 1, primitive_name: "direct", allowed: true, limits: {} },
  { id: 3, endpoint_id: 11, primitive_id: 2, primitive_name: "cot", allowed: false, limits: {} },
  { id: 4, endpoint_id: 12, primitive_id: 1, primitive_name: "direct", allowed: true, limits: {} },
];

type Handler = (request: FakeRequest) => ReturnType<typeof reply> | undefined;

/** A studio with one pool ("prod": right and wrong admissible with direct), gsm8k's 3 tasks, and `list` as the collections. */
function stub(list: () => unknown[], role = "researcher", handle: Handler = () => undefined) {
  const requests: FakeRequest[] = [];
  stubFetch((request) => {
    requests.push(request);
    const { url } = request;
    const handled = handle(request);
    if (handled) return handled;
    if (url === "/api/auth/me") return reply(200, { id: 2, username: "rita", email: "", role, is_staff: false });
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url === "/api/options")
      return reply(200, { benchmarks: ["gsm8k", "mmlu"], domains: ["math", "code"], default_pool_id: 1 });
    if (url.startsWith("/api/pools?")) return reply(200, { items: [{ id: 1, name: "prod" }], count: 1 });
    if (url.startsWith("/api/pools/1/endpoints?")) return reply(200, { items: ENDPOINTS, count: 3 });
    if (url.startsWith("/api/admissibility?")) return reply(200, { items: ADMISSIBLE, count: 4 });
    if (url.startsWith("/api/tasks?benchmark=gsm8k")) {
      const items = [{ id: 7 }, { id: 8 }, { id: 9 }];
      return reply(200, { items: url.includes("limit=1&") ? items.slice(0, 1) : items, count: 3 });
    }
    if (url.startsWith("/api/collections?")) {
      const items = list();
      return reply(200, { items, count: items.length });
    }
    return reply(404, { detail: "not here" });
  });
  return requests;
}

function renderPage(path = "/collections") {
  return renderAt(
    path,
    <RequireRole needs="researcher">
      <CollectionsPage />
    </RequireRole>,
  );
}

const posts = (requests: FakeRequest[], path: string) =>
  requests.filter((r) => r.method === "POST" && r.url === path).map((r) => r.body);

afterEach(() => vi.unstubAllGlobals());

describe("the pieces without React", () => {
  it("offers the admissible pairs of enabled endpoints, by name", () => {
    const pairs = poolPairs(ENDPOINTS as never, ADMISSIBLE);
    expect(pairs.map((p) => p.label)).toEqual(["right · direct", "wrong · direct"]);
    expect(pairs[0]).toMatchObject({ endpoint_id: 10, primitive: "direct", key: "10/direct" });
  });

  it("reads pasted task ids, each once, and names what is not one", () => {
    expect(parseTaskIds(" 12, 13\n14 12;x 0 1.5 ")).toEqual({ ids: [12, 13, 14], bad: ["x", "0", "1.5"] });
  });
});

describe("the collections page", () => {
  it("is not drawn for a viewer", async () => {
    stub(() => [], "viewer");
    renderPage();
    expect(await screen.findByTestId("role-gate")).toHaveProperty("dataset.needs", "researcher");
    expect(screen.queryByRole("heading", { name: "Collections" })).toBeNull();
  });

  it("says what a collection is when there is none", async () => {
    stub(() => []);
    renderPage();
    expect(await screen.findByText("No collection yet")).toBeTruthy();
  });

  it("shows each one's progress, spend, status and message, and polls only while one works", async () => {
    let ticks = 0;
    const requests = stub(() => {
      ticks += 1;
      return ticks === 1
        ? [collection(2, "running", { recorded: 5, failed: 1, started: 4, pending: 2 })]
        : [collection(2, "succeeded", { recorded: 11, failed: 1 }, { message: "11 cell(s) recorded, 1 failed" })];
    });
    renderPage();
    const bar = await screen.findByRole("progressbar", { name: "Collection #2 progress" });
    expect(bar.getAttribute("aria-valuenow")).toBe("6");
    expect(bar.getAttribute("aria-valuemax")).toBe("12");
    expect(bar.getAttribute("aria-valuetext")).toBe("6 of 12 cells, 1 failed");
    expect(screen.getByTestId("collection-spend").textContent).toBe("$0.18 of $1.00");
    expect(screen.getByTestId("job-status").textContent).toBe("running");
    expect(screen.getByRole("button", { name: "Cancel collection #2" })).toBeTruthy();

    await waitFor(() => expect(screen.getByTestId("job-status").textContent).toBe("succeeded"), {
      timeout: POLL_MS * 2,
    });
    expect(bar.getAttribute("aria-valuenow")).toBe("12");
    expect(screen.getByText("11 cell(s) recorded, 1 failed")).toBeTruthy();
    expect(screen.queryByRole("button", { name: /Cancel collection/ })).toBeNull();
    const asked = requests.filter((r) => r.url.startsWith("/api/collections?")).length;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS * 1.5));
    expect(requests.filter((r) => r.url.startsWith("/api/collections?")).length).toBe(asked);
  }, 15_000);

  it("starts one from the pool's pairs and a benchmark's tasks, and shows a refusal beside its field", async () => {
    const created = collection(5, "queued", { total: 3, pending: 3 }, { name: "gsm8k probe", budget_usd: 2 });
    let refuse = true;
    const requests = stub(
      () => (refuse ? [] : [created]),
      "researcher",
      ({ url, method }) => {
        if (url !== "/api/collections" || method !== "POST") return undefined;
        if (refuse) return reply(422, { detail: "Not admissible in pool 'prod': 11/direct.", field: "pairs" });
        return reply(201, created);
      },
    );
    renderPage();
    const user = userEvent.setup();
    const pairs = await screen.findByTestId("collection-pairs");
    await within(pairs).findByRole("checkbox", { name: "right · direct" });
    expect(
      within(pairs)
        .getAllByRole("checkbox")
        .map((box) => (box as HTMLInputElement).checked),
    ).toEqual([true, true]);
    await user.click(within(pairs).getByRole("checkbox", { name: "right · direct" }));
    await user.selectOptions(screen.getByRole("combobox", { name: "Benchmark" }), "gsm8k");
    await waitFor(() =>
      expect(screen.getByTestId("collection-cells").textContent).toBe(
        "3 task(s) × 1 pair(s) = 3 cell(s), one call each",
      ),
    );
    await user.type(screen.getByRole("textbox", { name: "Name" }), "gsm8k probe");
    const budget = screen.getByRole("spinbutton", { name: "Budget ($)" });
    await user.clear(budget);
    await user.type(budget, "2");
    await user.click(screen.getByRole("checkbox", { name: /Calibrate the pool/ }));
    await user.click(screen.getByTestId("start-collection"));

    const note = await within(pairs).findByRole("alert");
    expect(note.textContent).toBe("Not admissible in pool 'prod': 11/direct.");
    expect(pairs.getAttribute("aria-describedby")).toBe(note.id);
    expect(budget.getAttribute("aria-invalid")).toBeNull();

    refuse = false;
    await user.click(screen.getByTestId("start-collection"));
    expect(await screen.findByText("Collection #5 is queued.")).toBeTruthy();
    expect(within(pairs).queryByRole("alert")).toBeNull();
    expect(await screen.findByRole("progressbar", { name: "Collection #5 progress" })).toBeTruthy();
    expect(posts(requests, "/api/collections")[1]).toEqual({
      pool_id: 1,
      task_ids: [7, 8, 9],
      pairs: [{ endpoint_id: 11, primitive: "direct" }],
      budget_usd: 2,
      max_concurrency: 4,
      name: "gsm8k probe",
      calibrates: true,
    });
  });

  it("takes pasted task ids, refuses what is not one, and shows a 422 on the budget beside it", async () => {
    const requests = stub(
      () => [],
      "researcher",
      ({ url, method }) =>
        url === "/api/collections" && method === "POST"
          ? reply(422, {
              detail: "Invalid input. budget_usd: Input should be greater than 0",
              errors: [{ field: "budget_usd", message: "Input should be greater than 0" }],
              field: "budget_usd",
            })
          : undefined,
    );
    renderPage();
    const user = userEvent.setup();
    await user.click(await screen.findByRole("radio", { name: "By task ids" }));
    const ids = screen.getByRole("textbox", { name: "Task ids" });
    await user.type(ids, "4, 5 five");
    expect(screen.getByText("Not task ids: five.")).toBeTruthy();
    expect(screen.getByTestId<HTMLButtonElement>("start-collection").disabled).toBe(true);
    await user.clear(ids);
    await user.type(ids, "4, 5\n6");
    const budget = screen.getByRole("spinbutton", { name: "Budget ($)" });
    await user.clear(budget);
    await user.type(budget, "0{Enter}");

    const note = await screen.findByRole("alert");
    expect(note.textContent).toBe("Input should be greater than 0");
    expect(budget.getAttribute("aria-invalid")).toBe("true");
    expect(budget.getAttribute("aria-describedby")).toBe(note.id);
    expect(posts(requests, "/api/collections")[0]).toMatchObject({ task_ids: [4, 5, 6], budget_usd: 0 });
    await user.type(budget, "3");
    expect(screen.queryByRole("alert")).toBeNull();
  });

  it("starts with the task ids the Submit page's link names", async () => {
    stub(() => []);
    renderPage("/collections?tasks=21,22,23");
    const ids = await screen.findByRole("textbox", { name: "Task ids" });
    expect((ids as HTMLTextAreaElement).value).toBe("21,22,23");
    expect(screen.getByRole<HTMLInputElement>("radio", { name: "By task ids" }).checked).toBe(true);
  });

  it("cancels a running one and resumes a stopped one with a larger budget, from the keyboard", async () => {
    let rows = [
      collection(2, "running", { recorded: 3, pending: 9 }),
      collection(1, "stopped", { recorded: 8, pending: 4 }, { spent_usd: 1.01, message: "4 cells wait" }),
    ];
    const requests = stub(
      () => rows,
      "researcher",
      ({ url, body }) => {
        if (url === "/api/collections/2/cancel") {
          rows = [{ ...rows[0], status: "cancelled" }, rows[1]];
          return reply(200, rows[0]);
        }
        if (url === "/api/collections/1/resume") {
          const asked = (body as { budget_usd?: number }).budget_usd;
          if (asked !== undefined && asked <= 1.01)
            return reply(422, { detail: "The budget must be above the $1.010000 spent.", field: "budget_usd" });
          rows = [rows[0], { ...rows[1], status: "queued", budget_usd: asked ?? 1, message: "" }];
          return reply(200, rows[1]);
        }
        return undefined;
      },
    );
    renderPage();
    const user = userEvent.setup();
    const cancel = await screen.findByRole("button", { name: "Cancel collection #2" });
    cancel.focus();
    await user.keyboard("{Enter}");
    await waitFor(() => expect(screen.getAllByTestId("job-status")[0].textContent).toBe("cancelled"));
    expect(screen.getByRole("button", { name: "Resume collection #2" })).toBeTruthy();

    const budget = screen.getByRole("spinbutton", { name: "New budget for collection #1 in dollars (optional)" });
    await user.type(budget, "1{Enter}");
    const note = await screen.findByRole("alert");
    expect(note.textContent).toBe("The budget must be above the $1.010000 spent.");
    expect(budget.getAttribute("aria-describedby")).toBe(note.id);
    await user.clear(budget);
    await user.type(budget, "5");
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "Resume collection #1" }));
    await user.keyboard("{Enter}");
    await waitFor(() => expect(screen.getAllByTestId("job-status")[1].textContent).toBe("queued"));
    expect(screen.getByRole("button", { name: "Cancel collection #1" })).toBeTruthy();
    expect(posts(requests, "/api/collections/1/resume")).toEqual([{ budget_usd: 1 }, { budget_usd: 5 }]);
    expect(posts(requests, "/api/collections/2/cancel")).toEqual([undefined]);
  });
});

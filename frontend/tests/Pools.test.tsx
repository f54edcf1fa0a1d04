import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";

import { RequireRole } from "../src/auth";
import PoolsPage from "../src/pages/Pools";
import { renderAt, reply, stubFetch, type FakeRequest } from "./support";

const NO_OUTCOMES =
  "Source 'nowhere' has no recorded outcome for a model of pool 'prod': import the pool's probe outcomes under that source first (manage.py import_outcomes).";

function pool(calibrationSource: string) {
  return {
    id: 1,
    name: "prod",
    description: "",
    calibration_source: calibrationSource,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
  };
}

/** A pool with no endpoints, whose PATCH takes `probe-a` (or '') and refuses any other source as the service does. */
function stub(role: string, calibrationSource = "") {
  let current = pool(calibrationSource);
  const patches: FakeRequest[] = [];
  stubFetch((request) => {
    const { url, method, body } = request;
    if (url === "/api/auth/me") return reply(200, { id: 2, username: "ada", email: "", role, is_staff: false });
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url === "/api/pools/1" && method === "PATCH") {
      patches.push(request);
      const source = (body as { calibration_source: string }).calibration_source;
      if (source !== "" && source !== "probe-a")
        return reply(422, { detail: NO_OUTCOMES.replace("nowhere", source), field: "calibration_source" });
      current = { ...current, calibration_source: source };
      return reply(200, current);
    }
    if (url.startsWith("/api/pools?")) return reply(200, { items: [current], count: 1 });
    if (url.startsWith("/api/pools/1/endpoints?")) return reply(200, { items: [], count: 0 });
    if (url.startsWith("/api/primitives?") || url.startsWith("/api/admissibility?"))
      return reply(200, { items: [], count: 0 });
    return reply(404, { detail: "not here" });
  });
  return patches;
}

function renderPools() {
  return renderAt(
    "/pools",
    <RequireRole needs="viewer">
      <PoolsPage />
    </RequireRole>,
  );
}

afterEach(() => vi.unstubAllGlobals());

describe("a pool's calibration source", () => {
  it("is shown to a viewer, with no form", async () => {
    stub("viewer", "probe-a");
    renderPools();
    const shown = await screen.findByTestId("calibration-source");
    expect(shown.textContent).toBe(
      "probe-a: a learned run on this pool calibrates on this source's recorded outcomes of the pool's models.",
    );
    expect(screen.queryByLabelText("Calibration source")).toBeNull();
    expect(within(screen.getByTestId("calibration")).queryAllByRole("button")).toHaveLength(0);
  });

  it("says what none means when the pool names no source", async () => {
    stub("researcher");
    renderPools();
    expect((await screen.findByTestId("calibration-source")).textContent).toBe(
      "None: a learned run gives a pair its checkpoint never saw the mean accuracy of the checkpoint's pool.",
    );
    expect(screen.queryByRole("textbox", { name: "Calibration source" })).toBeNull();
  });

  it("an admin sets it with Enter, sees a refusal beside the field, and clears it", async () => {
    const patches = stub("admin");
    renderPools();
    const user = userEvent.setup();
    const input = await screen.findByRole("textbox", { name: "Calibration source" });
    expect(screen.getByRole<HTMLButtonElement>("button", { name: "Clear" }).disabled).toBe(true);

    await user.type(input, "nowhere{Enter}");
    const alert = await within(screen.getByTestId("calibration")).findByRole("alert");
    expect(alert.textContent).toBe(NO_OUTCOMES);
    expect(input.getAttribute("aria-invalid")).toBe("true");
    expect(document.getElementById(input.getAttribute("aria-describedby") ?? "")?.textContent).toBe(NO_OUTCOMES);
    expect(screen.getByTestId("calibration-source").textContent).toMatch(/^None:/);

    await user.clear(input);
    expect(screen.queryByRole("alert")).toBeNull();
    await user.type(input, " probe-a ");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.getByTestId("calibration-source").textContent).toMatch(/^probe-a: /));
    expect(input.getAttribute("aria-invalid")).toBe("false");

    await user.click(screen.getByRole("button", { name: "Clear" }));
    await waitFor(() => expect(screen.getByTestId("calibration-source").textContent).toMatch(/^None:/));
    expect((input as HTMLInputElement).value).toBe("");
    expect(patches.map((request) => request.body)).toEqual([
      { calibration_source: "nowhere" },
      { calibration_source: "probe-a" },
      { calibration_source: "" },
    ]);
  });
});

describe("adding an endpoint", () => {
  const PRIMITIVES = ["cot", "direct"].map((name, i) => ({
    id: i + 1,
    name,
    description: "",
    parameters: {},
    needs_tools: false,
  }));

  function stubEndpoints() {
    const posts: FakeRequest[] = [];
    stubFetch((request) => {
      const { url, method, body } = request;
      if (url === "/api/auth/me")
        return reply(200, { id: 2, username: "ada", email: "", role: "admin", is_staff: true });
      if (url === "/api/auth/csrf") return reply(200, {});
      if (url === "/api/pools/1/endpoints" && method === "POST") {
        posts.push(request);
        const named = (body as { primitives: string[] }).primitives;
        if (named.length === 0)
          return reply(422, {
            detail: "Choose at least one primitive.",
            errors: [{ field: "primitives", message: "Choose at least one primitive." }],
          });
        return reply(201, { id: 9, name: "mine", model: "openai/mine" });
      }
      if (url.startsWith("/api/pools?")) return reply(200, { items: [pool("")], count: 1 });
      if (url.startsWith("/api/primitives?")) return reply(200, { items: PRIMITIVES, count: 2 });
      if (url.startsWith("/api/pools/1/endpoints?") || url.startsWith("/api/admissibility?"))
        return reply(200, { items: [], count: 0 });
      return reply(404, { detail: "not here" });
    });
    return posts;
  }

  it("sends the endpoint and the primitives it may run in one request", async () => {
    const posts = stubEndpoints();
    renderPools();
    const user = userEvent.setup();
    await user.click(await screen.findByText("Add an endpoint", { selector: "summary" }));
    await user.type(screen.getByRole("textbox", { name: "Name" }), "mine");
    await user.type(screen.getByRole("textbox", { name: "Model (litellm)" }), "openai/mine");
    await user.type(screen.getByRole("textbox", { name: "API base" }), "http://127.0.0.1:8001/v1");
    await user.click(screen.getByRole("checkbox", { name: /cot/ }));
    await user.click(screen.getByRole("button", { name: "Add endpoint" }));
    expect(await screen.findByRole("status")).toHaveProperty("textContent", "Added; the pool answers through it now.");
    expect(posts.map((request) => request.body)).toEqual([
      {
        name: "mine",
        model: "openai/mine",
        api_base: "http://127.0.0.1:8001/v1",
        input_cost_per_mtok: null,
        output_cost_per_mtok: null,
        primitives: ["direct", "cot"],
      },
    ]);
  });

  it("is not offered to a viewer", async () => {
    stub("viewer");
    renderPools();
    await screen.findByTestId("calibration-source");
    expect(screen.queryByText("Add an endpoint")).toBeNull();
  });
});

import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { QueueItem } from "../src/api/types";
import { RequireRole } from "../src/auth";
import LabelPage from "../src/pages/Label";
import { verdictFor } from "../src/pages/label/verdicts";
import { renderAt, reply, stubFetch } from "./support";

function run(id: number, answer: string) {
  return {
    id,
    policy: "default",
    status: "succeeded",
    final_answer: answer,
    tokens_in: 100 + id,
    tokens_out: 10 + id,
    cost_usd: 0.001 * id,
    latency_s: 1.5,
    plan: {
      decompose: false,
      nodes: [{ key: "root", model: `model-${id}`, primitive: "cot", kind: "root", depends_on: [] }],
    },
  };
}

function pair(id: number, swap: boolean): QueueItem {
  return {
    pair_id: id,
    source: "human",
    label_count: 0,
    task: { id: 100 + id, text: `Task of pair ${id}`, benchmark: "gsm8k", domain: "math" },
    swap,
    margin: null,
    run_a: run(id * 10 + 1, `answer A of pair ${id}`),
    run_b: run(id * 10 + 2, `answer B of pair ${id}`),
  };
}

interface Posted {
  pairId: number;
  body: { verdict: string; seconds_spent: number | null };
}

/** A tiny fake server: the queue leaves out what this user labeled, as the real one does. */
function fakeServer(pairs: QueueItem[], role = "labeler") {
  const posted: Posted[] = [];
  const undone: number[] = [];
  const fetchMock = stubFetch(({ url, method, body: sent }) => {
    if (url === "/api/auth/me") return reply(200, { id: 7, username: "ann", email: "", role, is_staff: false });
    if (url === "/api/auth/csrf") return reply(200, {});
    if (url.startsWith("/api/preferences/queue")) {
      const labeled = new Set(posted.map((p) => p.pairId));
      const items = pairs.filter((p) => !labeled.has(p.pair_id));
      return reply(200, {
        items,
        progress: { labeled: labeled.size, total: pairs.length, remaining: pairs.length - labeled.size },
      });
    }
    const label = url.match(/^\/api\/preferences\/pairs\/(\d+)\/labels$/);
    if (label && method === "POST") {
      const body = sent as Posted["body"];
      posted.push({ pairId: Number(label[1]), body });
      return reply(201, {
        id: posted.length,
        pair_id: Number(label[1]),
        labeler: "ann",
        verdict: body.verdict,
        seconds_spent: body.seconds_spent,
        created_at: "2026-01-01T00:00:00Z",
      });
    }
    if (label && method === "DELETE") {
      const at = posted.findIndex((p) => p.pairId === Number(label[1]));
      if (at < 0) return reply(404, { detail: `You have no verdict on pair ${label[1]} to undo.` });
      undone.push(posted.splice(at, 1)[0].pairId);
      return reply(204, null);
    }
    if (/^\/api\/runs\/\d+\/tree$/.test(url)) return reply(404, { detail: "Run does not exist." });
    return reply(404, { detail: `unexpected ${method} ${url}` });
  });
  return { posted, undone, fetchMock };
}

function renderPage() {
  return renderAt(
    "/label",
    <RequireRole needs="labeler">
      <LabelPage />
    </RequireRole>,
  );
}

async function shownPair() {
  return screen.findByTestId("label-pair");
}

beforeEach(() => {
  document.cookie = "csrftoken=test-token";
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("verdictFor", () => {
  it("maps the shown sides back to the pair's own A and B", () => {
    expect(verdictFor("A", false)).toBe("a");
    expect(verdictFor("B", false)).toBe("b");
    expect(verdictFor("A", true)).toBe("b");
    expect(verdictFor("B", true)).toBe("a");
    expect(verdictFor("T", true)).toBe("tie");
    expect(verdictFor("S", false)).toBe("skip");
  });
});

describe("the labeling queue", () => {
  it("B then Enter labels the right-hand run, then shows the next pair", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(1, false), pair(2, true)]);
    renderPage();

    const first = await shownPair();
    expect(first.dataset.pairId).toBe("1");
    // not swapped: run A on the left
    const left = within(first).getByRole("article", { name: "Left run" });
    expect(left.textContent).toContain("answer A of pair 1");
    expect(screen.getByTestId("label-progress").textContent).toContain("0 of 2 labeled");

    await user.keyboard("b");
    expect(screen.getByTestId("verdict-B").getAttribute("aria-pressed")).toBe("true");
    expect(screen.getByTestId("verdict-A").getAttribute("aria-pressed")).toBe("false");
    expect(posted).toHaveLength(0); // nothing is sent before Enter

    await user.keyboard("{Enter}");
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0].pairId).toBe(1);
    expect(posted[0].body.verdict).toBe("b");
    expect(typeof posted[0].body.seconds_spent).toBe("number");
    expect(posted[0].body.seconds_spent).toBeGreaterThanOrEqual(0);

    expect((await screen.findByTestId("label-submitted")).textContent).toContain("pair #1");
    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("2"));
    expect(screen.getByTestId("label-progress").textContent).toContain("1 of 2 labeled");
    // a new pair starts with no verdict
    expect(screen.getByTestId("verdict-B").getAttribute("aria-pressed")).toBe("false");
  });

  it("maps the verdict back when the API swapped the sides", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(5, true)]);
    renderPage();

    const shown = await shownPair();
    // swapped: run B on the left, run A on the right
    expect(within(shown).getByRole("article", { name: "Left run" }).textContent).toContain("answer B of pair 5");
    expect(within(shown).getByRole("article", { name: "Right run" }).textContent).toContain("answer A of pair 5");

    await user.keyboard("b"); // the right-hand run, which is the pair's run A
    await user.keyboard("{Enter}");
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0]).toMatchObject({ pairId: 5, body: { verdict: "a" } });
  });

  it("A on a swapped pair names run B", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(6, true)]);
    renderPage();
    await shownPair();
    await user.keyboard("a{Enter}");
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0]).toMatchObject({ pairId: 6, body: { verdict: "b" } });
  });

  it("S then Enter posts a skip, T a tie, and the last pair leaves the empty state", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(3, false), pair(4, true)]);
    renderPage();

    expect((await shownPair()).dataset.pairId).toBe("3");
    await user.keyboard("s");
    expect(screen.getByTestId("verdict-S").getAttribute("aria-pressed")).toBe("true");
    await user.keyboard("{Enter}");
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0]).toMatchObject({ pairId: 3, body: { verdict: "skip" } });

    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("4"));
    await user.keyboard("t{Enter}");
    await waitFor(() => expect(posted).toHaveLength(2));
    expect(posted[1]).toMatchObject({ pairId: 4, body: { verdict: "tie" } });

    expect(await screen.findByText("Nothing left to label")).toBeTruthy();
    expect(screen.queryByTestId("label-pair")).toBeNull();
    await waitFor(() => expect(screen.getByTestId("label-progress").textContent).toContain("2 of 2 labeled"));
  });

  it("Enter without a verdict sends nothing; a changed mind sends the last pick", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(8, false)]);
    renderPage();
    await shownPair();
    await user.keyboard("{Enter}");
    expect(await screen.findByText(/Pick a verdict first/)).toBeTruthy();
    expect(posted).toHaveLength(0);
    await user.keyboard("a");
    await user.keyboard("b");
    expect(screen.getByTestId("verdict-A").getAttribute("aria-pressed")).toBe("false");
    await user.keyboard("{Enter}");
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0].body.verdict).toBe("b");
  });

  it("keys typed in a field do not label", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(9, false)]);
    renderPage();
    await shownPair();
    const field = document.createElement("input");
    document.body.appendChild(field);
    await user.click(field);
    await user.keyboard("b{Enter}");
    expect(screen.getByTestId("verdict-B").getAttribute("aria-pressed")).toBe("false");
    expect(posted).toHaveLength(0);
    field.remove();
  });

  it("the buttons work with the mouse too, and the verdict still maps through the swap", async () => {
    const user = userEvent.setup();
    const { posted } = fakeServer([pair(11, true)]);
    renderPage();
    await shownPair();
    await user.click(screen.getByTestId("verdict-A"));
    expect(screen.getByTestId("verdict-A").getAttribute("aria-pressed")).toBe("true");
    await user.click(screen.getByRole("button", { name: /Submit/ }));
    await waitFor(() => expect(posted).toHaveLength(1));
    expect(posted[0]).toMatchObject({ pairId: 11, body: { verdict: "b" } });
  });

  it("says plainly when there is nothing to label", async () => {
    fakeServer([]);
    renderPage();
    expect(await screen.findByText("Nothing left to label")).toBeTruthy();
    expect(screen.getByText(/Researchers make pairs/)).toBeTruthy();
    expect(screen.getByTestId("label-progress").textContent).toContain("0 of 0 labeled");
  });

  it("hides the researcher tabs from labelers", async () => {
    fakeServer([pair(1, false)]);
    renderPage();
    await shownPair();
    expect(screen.queryByRole("tab", { name: "Agreement" })).toBeNull();
  });

  it("undoes the last verdict with U: the pair is shown again and can be judged anew", async () => {
    const user = userEvent.setup();
    const { posted, undone } = fakeServer([pair(1, false), pair(2, false)]);
    renderPage();
    await shownPair();
    await user.keyboard("a{Enter}");
    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("2"));

    await user.keyboard("u");
    await waitFor(() => expect(undone).toEqual([1]));
    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("1"));
    expect(screen.getByTestId("label-undone").textContent).toContain("pair #1");
    expect(screen.queryByTestId("label-submitted")).toBeNull(); // nothing left to undo
    expect(screen.getByTestId("label-progress").textContent).toContain("0 of 2 labeled");

    await user.keyboard("b{Enter}");
    await waitFor(() => expect(posted.map((p) => [p.pairId, p.body.verdict])).toEqual([[1, "b"]]));
    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("2"));
  });

  it("undoes with the button too, and U does nothing before any verdict", async () => {
    const user = userEvent.setup();
    const { undone } = fakeServer([pair(3, true)]);
    renderPage();
    await shownPair();
    await user.keyboard("u");
    expect(undone).toEqual([]);
    await user.keyboard("t{Enter}");
    expect(await screen.findByText("Nothing left to label")).toBeTruthy();
    await user.click(screen.getByTestId("label-undo"));
    await waitFor(() => expect(screen.getByTestId("label-pair").dataset.pairId).toBe("3"));
    expect(undone).toEqual([3]);
  });
});

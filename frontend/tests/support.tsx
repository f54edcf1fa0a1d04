import type { PresetCheck } from "../src/lib/pareto";
// What the page tests share: a fake server behind fetch, and a page rendered with a fresh query client
// (no retries, so a failure shows at once) at a path of an in-memory router.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter } from "react-router";
import { vi } from "vitest";

export const reply = (status: number, body: unknown) =>
  ({ ok: status < 400, status, statusText: "", json: () => Promise.resolve(body) }) as unknown as Response;

/** What a fake server sees of a fetch: the URL, the method and the JSON body sent. */
export interface FakeRequest {
  url: string;
  method: string;
  body: unknown;
}

function urlOf(input: RequestInfo | URL): string {
  if (typeof input === "string") return input;
  return input instanceof URL ? input.href : input.url;
}

/** A JSON body as its value, any other text (a JSONL upload) as it is. */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** `fetch` answered by `server`; returns the mock, to look at its calls. */
export function stubFetch(server: (request: FakeRequest) => Response) {
  const mock = vi.fn((input: RequestInfo | URL, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? parsed(init.body) : undefined;
    return Promise.resolve(server({ url: urlOf(input), method: init?.method ?? "GET", body }));
  });
  vi.stubGlobal("fetch", mock);
  return mock;
}

export function renderAt(path: string, page: ReactNode) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[path]}>{page}</MemoryRouter>
    </QueryClientProvider>,
  );
}

// A report's `presets` (orchestrator/evaluate_frontier.py, `preset_checks`), out of the CLI's order, one not held.
export const PRESETS: Record<string, PresetCheck> = {
  cheap: { lambda: 1.0, macro: 0.5414, cost: 8.117e-5, against: "the cheapest pair: 0.5414 at $8.117e-05", held: true },
  balanced: {
    lambda: 0.05,
    macro: 0.8186,
    cost: 0.001664,
    against: "single pairs and the zero router: not dominated",
    held: false,
  },
  best: {
    lambda: 0.0,
    macro: 0.8342,
    cost: 0.004993,
    against: "the most accurate pair: 0.8342 at $4.993e-03",
    held: true,
  },
};

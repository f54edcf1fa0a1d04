// What the page tests share: a fetch reply, and a page rendered with a fresh query client
// (no retries, so a failure shows at once) at a path of an in-memory router.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter } from "react-router";

export const reply = (status: number, body: unknown) =>
  ({ ok: status < 400, status, statusText: "", json: async () => body }) as unknown as Response;

export function renderAt(path: string, page: ReactNode) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return render(
    <QueryClientProvider client={client}>
      <MemoryRouter initialEntries={[path]}>{page}</MemoryRouter>
    </QueryClientProvider>,
  );
}

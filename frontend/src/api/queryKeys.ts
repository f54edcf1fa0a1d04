// Every query key of the studio, in one place: one endpoint is cached under one key wherever
// it is read, and invalidating a key reaches every query below it (`keys.runs.all` reaches
// each run's tree and every page of the list).
/** The runs list's filters, as the URL and the API name them. */
export type RunFilters = Readonly<Record<string, string>>;

export const keys = {
  me: ["me"] as const,
  options: ["options"] as const,
  users: ["users"] as const,
  task: (id: number) => ["tasks", id] as const,
  /** How many tasks a filter matches (a page of one task, for its `count`). */
  taskCount: (filters: RunFilters) => ["tasks", "count", filters] as const,
  recordedItems: (source: string, search: string, offset: number) =>
    ["recorded-items", source, search, offset] as const,
  primitives: ["primitives"] as const,
  pools: {
    list: ["pools", "list"] as const,
    endpoints: (poolId: number) => ["pools", poolId, "endpoints"] as const,
    admissibility: (poolId: number) => ["pools", poolId, "admissibility"] as const,
  },
  runs: {
    all: ["runs"] as const,
    list: (filters: RunFilters, offset: number) => ["runs", "list", filters, offset] as const,
    tree: (id: number) => ["runs", id, "tree"] as const,
  },
  preferences: {
    all: ["preferences"] as const,
    queue: ["preferences", "queue"] as const,
    agreements: ["preferences", "agreement"] as const,
    agreement: (source: string, minOverlap: number) => ["preferences", "agreement", source, minOverlap] as const,
    pairs: (offset: number) => ["preferences", "pairs", offset] as const,
  },
  training: {
    jobs: ["training", "jobs"] as const,
    job: (id: number) => ["training", "job", id] as const,
    checkpoints: ["training", "checkpoints"] as const,
  },
  collections: {
    all: ["collections"] as const,
    list: (offset: number) => ["collections", "list", offset] as const,
    /** Every collection, for the training and evaluation forms' choice. */
    every: ["collections", "every"] as const,
  },
  evaluations: {
    list: ["evaluations", "list"] as const,
    detail: (id: number) => ["evaluations", "detail", id] as const,
    options: ["evaluations", "options"] as const,
  },
};

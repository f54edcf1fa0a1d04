// One colour per evaluated method, the same on the plot and its legend.
const PALETTE: Record<string, string> = {
  learned: "#3559d6",
  random: "#a0aec0",
  cheapest: "#2f855a",
  best_single: "#c05621",
  zero: "#1a202c",
  oracle: "#6b46c1",
  cascade: "#d69e2e",
  knn: "#319795",
  cluster: "#2b6cb0",
  mf: "#c53030",
  always_decompose: "#718096",
  self_consistency: "#b83280",
};

export const colour = (method: string) => PALETTE[method] ?? "#4a5568";

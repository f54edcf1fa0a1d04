// A run's decomposition tree. (Outline version; the React Flow graph replaces it.)
import type { Tree } from "../api/types";

export interface RunTreeProps {
  tree: Tree;
  selected?: string | null;
  onSelect?: (key: string) => void;
  height?: number;
}

export function RunTreeView({ tree, selected, onSelect }: RunTreeProps) {
  return (
    <ul className="tree-outline">
      {tree.nodes.map((node) => (
        <li key={node.key} style={{ marginLeft: node.depth * 16 }}>
          <button type="button" className={node.key === selected ? "selected" : ""} onClick={() => onSelect?.(node.key)}>
            <span className={`status ${node.status}`}>{node.status}</span> {node.text.slice(0, 80)}
          </button>
        </li>
      ))}
    </ul>
  );
}

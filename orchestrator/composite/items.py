"""A composite task as a run carries it: its metadata's `items`, each a recorded item or a
nested composite (`{"items": [...]}`), so any depth can be decomposed or delegated live.

A recorded item is `{"item_id", "prompt", "source", "benchmark", "domain", "gold",
"recorded_pairs"}` (what `studio.services.tasks.task_create_composite` writes). A node that
holds items can be split into one subtask per entry (`subtasks`), or solved whole by one
pair: the call then carries every leaf's item id (`item_ids`), and replay answers each part
with that pair's recording of it (`composite_answer`): no interference between the parts,
the assumption the composite evaluation states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.composite.build import Composite, composite_text
from orchestrator.core.items import is_composite, leaves
from orchestrator.core.protocol import NodeView, Observation, SubtaskSpec
from orchestrator.routing.table import OutcomeTable

# What a part of a composite task keeps from its item: what it is, and what its primitives need.
PART_KEYS = ("benchmark", "domain", "gold", "recorded_pairs", "source", "context", "tests", "entry_point", "tools")


def node_items(node: NodeView, observation: Observation) -> list[Mapping[str, Any]]:
    """The entries a node holds: the task's for the root of a composite task, a nested part's
    own; none for any other node."""
    if node.kind == "root":
        return list(observation.task_metadata.get("items") or []) if observation.decomposable else []
    return list(node.metadata.get("items") or []) if node.kind == "subtask" else []


def text_of_items(items: Sequence[Mapping[str, Any]]) -> str:
    """The task the entries pose, as `composite_text` writes it (a nested entry by its own)."""
    return composite_text([text_of_items(e["items"]) if is_composite(e) else str(e["prompt"]) for e in items])


def domain_of(items: Sequence[Mapping[str, Any]]) -> str:
    """The entries' one domain, or "" for several."""
    domains = {str(leaf.get("domain") or "") for leaf in leaves(items)}
    return domains.pop() if len(domains) == 1 else ""


def recorded_pairs(items: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The (model, primitive) pairs recorded on every leaf: the ones that can take them all."""
    found: set[tuple[str, ...]] | None = None
    for leaf in leaves(items):
        pairs = {tuple(pair) for pair in leaf.get("recorded_pairs") or ()}
        found = pairs if found is None else found & pairs
    return [list(pair) for pair in sorted(found or ())]


def subtasks(items: Sequence[Mapping[str, Any]]) -> tuple[SubtaskSpec, ...]:
    """One independent subtask per entry: a recorded item, or a nested composite that may be
    decomposed again (its metadata holds its items)."""
    specs = []
    for index, entry in enumerate(items, start=1):
        if is_composite(entry):
            metadata: dict[str, Any] = {"items": list(entry["items"]), "domain": domain_of(entry["items"])}
            metadata["recorded_pairs"] = recorded_pairs(entry["items"])
            specs.append(SubtaskSpec(id=f"part{index}", text=text_of_items(entry["items"]), metadata=metadata))
        else:
            specs.append(
                SubtaskSpec(
                    id=f"item{index}",
                    text=str(entry["prompt"]),
                    item_id=str(entry["item_id"]),
                    metadata={key: entry[key] for key in PART_KEYS if key in entry},
                )
            )
    return tuple(specs)


def items_of(composite: Composite, table: OutcomeTable) -> list[dict[str, Any]]:
    """The metadata `items` of a composite built from `table`'s rows (for a run of it)."""
    available = table.available()

    def entries(c: Composite) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in c.parts:
            if isinstance(part, Composite):
                out.append({"items": entries(part)})
                continue
            out.append(
                {
                    "item_id": table.item_ids[part],
                    "prompt": table.prompts[part],
                    "source": table.sources[part],
                    "benchmark": table.benchmarks[part],
                    "domain": table.domains[part],
                    "recorded_pairs": [list(table.pairs[j]) for j in range(table.n_pairs) if available[part, j]],
                }
            )
        return out

    return entries(composite)

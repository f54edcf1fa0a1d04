"""The demo policy shipped with the repository, so a fresh `make up` serves the learned policy
at once instead of after minutes of training.

    .venv/bin/python -m orchestrator.ship_policy [--check]

Builds `data/checkpoints/demo-policy.pt` exactly as the studio's first demo training job
trains it on a fresh install (`workers.policy_training`: RouterBench's outcomes and the local
model's, seed 0, the default `LearnedConfig`, the shipped prices, no live runs yet), and
`demo-policy.json`: what it was built from (each input's SHA-256, the text embedding, seed
and config) and its metrics. `up` installs it only while that fingerprint still matches the
data and code it finds (`shipped_demo`); otherwise it trains the demo policy as before.
`--check` prints whether the shipped one matches, and exits 1 when it does not; `--verify`
trains it again into a temporary file and compares every weight with the shipped one's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.embedding import EMBEDDING_ID

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "data" / "checkpoints" / "demo-policy.pt"
# RouterBench's recordings, and the local model's real outcomes on arithmetic
# (data/outcomes/PROVENANCE.md), so the demo policy knows the local model from data.
OUTCOMES = ("routerbench.jsonl.gz", "smollm2.jsonl.gz")
SEED = 0
# What a checkpoint holds, beyond its weights: 2 = the calibration and the cascade gates at the presets.
FORMAT = 2


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(outcomes_dir: Path) -> dict[str, Any]:
    """What the demo policy is a function of: its inputs' bytes, the embedding, seed and config."""
    from orchestrator.learning.method import LearnedConfig

    return {
        "outcomes": {name: _sha256(outcomes_dir / name) for name in OUTCOMES},
        "prices": _sha256(outcomes_dir / "prices.json"),
        "embedding": EMBEDDING_ID,
        "seed": SEED,
        "format": FORMAT,
        "learned": json.loads(json.dumps(LearnedConfig().to_dict())),
    }


def manifest_path(checkpoint: Path) -> Path:
    return checkpoint.with_suffix(".json")


def shipped_demo(outcomes_dir: Path, checkpoint: Path = SHIPPED) -> dict[str, Any] | None:
    """The shipped demo checkpoint's manifest, where the checkpoint is there and was built from
    exactly these outcomes, prices, embedding and config; else None."""
    manifest = manifest_path(checkpoint)
    if not checkpoint.is_file() or not manifest.is_file():
        return None
    try:
        found: dict[str, Any] = json.loads(manifest.read_text())
        current = fingerprint(outcomes_dir)
    except (OSError, ValueError):
        return None
    if found.get("fingerprint") != current or found.get("sha256") != _sha256(checkpoint):
        return None
    return found


def build(outcomes_dir: Path, out: Path = SHIPPED) -> dict[str, Any]:
    from orchestrator.learning.method import LearnedConfig
    from orchestrator.train_policy import train

    config = LearnedConfig()
    started = time.monotonic()
    paths = [outcomes_dir / name for name in OUTCOMES]
    metrics = train(paths, out=out, seed=SEED, config=config, prices=outcomes_dir / "prices.json", show_progress=False)
    manifest = {
        "fingerprint": fingerprint(outcomes_dir),
        "sha256": _sha256(out),
        # As workers.policy_training saves a trained policy's config and lineage.
        "config": {**config.to_dict(), "seed": SEED, "embedding": EMBEDDING_ID, "calibration": True},
        "lineage": {"outcomes": list(OUTCOMES), "seed": SEED, "live_runs": 0, "shipped": True},
        "metrics": metrics,
        "built_in_s": round(time.monotonic() - started, 1),
        "built_by": "python -m orchestrator.ship_policy",
    }
    manifest_path(out).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def verify(outcomes_dir: Path) -> int:
    """Train the demo policy again and compare its weights with the shipped checkpoint's."""
    import tempfile

    import torch

    from orchestrator.learning.model import load_checkpoint

    if shipped_demo(outcomes_dir) is None:
        print(f"{SHIPPED}: missing or stale: build it again")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        again = Path(folder) / "demo-policy.pt"
        manifest = build(outcomes_dir, again)
        shipped_net, _ = load_checkpoint(SHIPPED)
        fresh_net, _ = load_checkpoint(again)
    pairs = list(zip(shipped_net.state_dict().values(), fresh_net.state_dict().values(), strict=True))
    worst = max(float((a - b).abs().max()) for a, b in pairs)
    same = "identical" if all(torch.equal(a, b) for a, b in pairs) else "differs"
    print(f"trained again in {manifest['built_in_s']} s: largest weight difference {worst:.3g} ({same})")
    return 0 if worst < 1e-4 else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes-dir", type=Path, default=ROOT / "data" / "outcomes")
    parser.add_argument("--check", action="store_true", help="only say whether the shipped one matches")
    parser.add_argument("--verify", action="store_true", help="train again and compare the weights")
    args = parser.parse_args(argv)
    if args.verify:
        return verify(args.outcomes_dir)
    if args.check:
        ok = shipped_demo(args.outcomes_dir) is not None
        print(f"{SHIPPED}: {'matches' if ok else 'missing or stale: build it again'}")
        return 0 if ok else 1
    manifest = build(args.outcomes_dir)
    print(f"{SHIPPED} ({SHIPPED.stat().st_size / 1e6:.1f} MB) built in {manifest['built_in_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

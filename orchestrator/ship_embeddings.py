"""Build the embeddings shipped with the repository, so a fresh clone need not encode them.

    .venv/bin/python -m orchestrator.ship_embeddings data/outcomes/routerbench.jsonl.gz [...]

For each outcome file, the vector of every distinct prompt (`embedding.embed`, through the
cache) goes to `data/embeddings/<EMBEDDING_ID>/<file stem>.npz`: `keys` (each text's SHA-256)
and `vectors` (float32 [n, 384]), in key order. `embedding.embed` reads them before the
model. `tests/orchestrator/test_shipped_embeddings.py` encodes a sample again and compares.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from orchestrator.embedding import SHIPPED_DIR, embed, text_key
from orchestrator.outcomes import read_outcomes


def ship(outcomes: Path, folder: Path = SHIPPED_DIR) -> Path:
    prompts = sorted({record.prompt for record in read_outcomes(outcomes)}, key=text_key)
    vectors = embed(prompts, progress=True)
    out = folder / f"{outcomes.name.split('.')[0]}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, keys=np.array([text_key(p) for p in prompts]), vectors=vectors.astype(np.float32))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outcomes", nargs="+", type=Path, help="outcome files whose prompts to ship")
    args = parser.parse_args(argv)
    for path in args.outcomes:
        if not path.is_file():
            parser.error(f"{path} is not a file")
        out = ship(path)
        print(f"{path}: {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

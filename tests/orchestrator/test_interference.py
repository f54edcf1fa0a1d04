"""The interference measurement's pieces (orchestrator.composite.interference): composites
drawn per size bucket, a whole answer cut into its parts, and the bucket summary."""

from __future__ import annotations

import pytest

from orchestrator.composite.interference import Within, bucket_of, draw, split_parts, summarize


def test_composites_take_turns_over_the_buckets_with_distinct_items() -> None:
    drawn = draw(60, 30, seed=0)
    assert [bucket_of(len(c)) for c in drawn[:3]] == ["2", "3", "4-6"]
    assert all(len(set(c)) == len(c) and all(0 <= i < 60 for i in c) for c in drawn)
    assert sorted({len(c) for c in drawn[2::3]}) == [4, 5, 6]  # the last bucket spans its sizes
    assert draw(60, 30, seed=0) == drawn and draw(60, 30, seed=1) != drawn
    with pytest.raises(ValueError, match="cannot make composites of up to 6"):
        draw(5, 3, seed=0)
    with pytest.raises(ValueError, match="no bucket holds 7 parts"):
        bucket_of(7)


def test_a_whole_answer_is_cut_at_its_part_markers() -> None:
    text = "Sure.\nPart 1: 12\n**Part 3.** the answer is 7\npart 2) 5 then\nPart 1: 99"
    assert split_parts(text, 3) == ["12", "5 then", "the answer is 7"]  # a repeated marker keeps its first piece
    assert split_parts("The answer is 30.", 2) == [None, None]
    assert split_parts("Part 4: 1", 3) == [None, None, None]  # no such part
    assert split_parts("the second part 2: 5", 2) == [None, None]  # a marker starts a line


def test_the_summary_compares_each_bucket_with_the_parts_alone() -> None:
    alone = {0: [1.0, 1.0], 1: [0.0, 1.0], 2: [1.0, 0.0], 3: [0.0, 0.0]}
    within = [
        Within(items=(0, 1), scores=(1.0, 0.0), found=(True, True)),
        Within(items=(2, 3), scores=(0.0, 0.0), found=(True, False)),
        Within(items=(0, 1, 2), scores=(1.0, 1.0, 0.0), found=(True, True, True)),
    ]
    out = summarize(within, alone, draws=200)
    two, three = out["2"], out["3"]
    assert "4-6" not in out  # no composite of that size
    assert (two.composites, two.parts, two.found) == (2, 4, 0.75)
    # alone: (1 + .5 + .5 + 0) / 4 = .5; within: 1 / 4
    assert two.alone.value == pytest.approx(0.5) and two.within.value == pytest.approx(0.25)
    assert two.difference.value == pytest.approx(-0.25) and two.ratio.value == pytest.approx(0.5)
    assert two.difference.low <= -0.25 <= two.difference.high
    # one composite: the interval is the point itself (alone 1 + .5 + .5, within 2)
    assert three.difference.value == pytest.approx(0.0)
    assert three.ratio.low == three.ratio.high == pytest.approx(1.0)
    assert three.as_dict()["ratio"] == {"value": 1.0, "low": 1.0, "high": 1.0}

"""goal_probability's score config sits beside the rubric but is no dimension: the rubric,
its hash, the judge's prompt and reply schema and the overall are what they were."""

from __future__ import annotations

import json
import shutil

import pytest

from scorer.errors import ConfigError
from scorer.judge import prompts as P
from scorer.judge.rubric import load_rubric
from scorer.judge.schema import scoring_model
from scorer.resources import data_dir

DIMENSIONS = [
    "goal_achievement",
    "process_adherence",
    "tool_efficiency",
    "context_efficiency",
    "error_handling",
    "output_quality",
]


def test_the_probability_config_is_derived_not_a_dimension():
    rubric = load_rubric()
    assert [s.name for s in rubric.dimensions] == DIMENSIONS
    assert [s.name for s in rubric.scores] == [*DIMENSIONS, "overall_quality"]
    (prob,) = rubric.derived
    assert (prob.name, prob.data_type, prob.weight) == ("goal_probability", "NUMERIC", 0.0)
    assert (prob.min_value, prob.max_value) == (0.0, 1.0)
    assert [s.name for s in rubric.all_configs] == [*DIMENSIONS, "overall_quality", prob.name]
    assert rubric.overall(dict.fromkeys(DIMENSIONS, 1.0)) == 1.0


def test_the_rubric_hash_ignores_the_derived_config(tmp_path):
    copy = tmp_path / "score_configs"
    shutil.copytree(data_dir("score_configs"), copy)
    bundled = load_rubric(copy)
    path = copy / "goal_probability.toml"
    path.write_text(path.read_text().replace("Probability (0-1)", "The probability (0-1)"))
    assert load_rubric(copy).hash == bundled.hash
    path.unlink()
    without = load_rubric(copy)
    assert without.hash == bundled.hash and without.derived == []


def test_the_judge_is_never_asked_for_it():
    rubric = load_rubric()
    [block] = P.system_blocks(P.default_prompts(), rubric)
    assert "goal_probability" not in block["text"]
    schema = json.dumps(scoring_model(rubric).model_json_schema())
    assert "goal_probability" not in schema


@pytest.mark.parametrize(
    "extra",
    ["weight = 0.1", 'data_type = "CATEGORICAL"', "computed = true"],
)
def test_a_derived_config_with_a_weight_or_categories_is_refused(tmp_path, extra):
    copy = tmp_path / "score_configs"
    shutil.copytree(data_dir("score_configs"), copy)
    path = copy / "goal_probability.toml"
    lines = [
        line
        for line in path.read_text().splitlines()
        if not line.startswith(extra.split(" ")[0] + " ")
    ]
    path.write_text("\n".join([*lines, extra, ""]))
    with pytest.raises(ConfigError, match="goal_probability"):
        load_rubric(copy)

"""Ranking predictions as a user sends them: docs/metrics.md's JSON Lines through `holistic submit`, a bad
ranking reported by line and field, and `holistic profile` showing the retrieval family."""

from __future__ import annotations

from click.testing import CliRunner

from holistic_app.cli import main
from tests.conftest import drain

# The docs' example (docs/metrics.md, Retrieval, Input), and a bad relevance on line 4.
LINES = [
    '{"id": "q17", "scenario": "msmarco", "task": "TASK_RANKING", "input": "what is a lobster roll",'
    ' "ranking": {"documents": [{"id": "p1", "score": 3.2, "relevance": 1}, {"id": "p2", "score": 1.5}]}}',
    '{"id": "q18", "scenario": "msmarco", "task": "TASK_RANKING", "input": "lobster roll price",'
    ' "ranking": {"documents": [{"id": "p1", "score": 0.2}, {"id": "p2", "score": 1.5}]}}',
    '{"id": "q18", "scenario": "msmarco", "task": "TASK_RANKING",'
    ' "ranking": {"documents": [{"id": "p1", "relevance": 1}]}}',
    '{"id": "q19", "scenario": "msmarco", "task": "TASK_RANKING", "input": "x",'
    ' "ranking": {"documents": [{"id": "p1", "relevance": 1.5}]}}',
]


def test_submit_rankings_from_json_lines_and_see_the_profile(gateway, make_worker, tmp_path):
    path = tmp_path / "rankings.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    runner = CliRunner()
    args = ["submit", str(path), "--target", gateway.address, "--no-progress", "--model", "ranker"]
    result = runner.invoke(main, args)
    assert "accepted 3 predictions" in result.output and "rejected 1 line\n" in result.output, result.output
    assert "line 4: predictions[" in result.output and "ranking.documents[0].relevance" in result.output
    drain(make_worker("accuracy"), make_worker("retrieval"))
    table = runner.invoke(main, ["profile", "ranker", "--target", gateway.address], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    out = table.output
    # q17: p1 (relevant) first, RR 1; q18: p2 then p1 (judged relevant later), RR 1/2: mean 0.75
    assert "msmarco" in out and "ranking" in out and "RR@10" in out and "0.75" in out
    assert "retrieval" in out

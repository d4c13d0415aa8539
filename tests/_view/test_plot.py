"""Plots drawn from the report's numbers, checked by reading back what each figure shows."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
import viewdata
from PIL import Image

from gym._plot import (
    TrainingPoint,
    figure_data,
    pass_at_1_figure,
    pass_at_k_figure,
    png_bytes,
    scatter_figure,
    training_figure,
)
from gym._report import build_report, task_scores
from gym._store import Store

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


@pytest.fixture(scope="module")
def report(stored):
    return build_report(Store(stored, read_only=True), viewdata.RUN_B)


def test_pass_at_1_figure_plots_the_reports_values_and_intervals(report):
    (panel,) = figure_data(pass_at_1_figure(report))
    (series,) = panel["series"]
    g = report.envs[0].pass_at_1
    assert panel["xticklabels"] == ["PyFunc-v0"]
    assert series["y"] == [g.value]
    # the plot draws error bars (value - lo, hi - value): the ends come back to 1e-12
    assert series["lo"] == pytest.approx([g.lo], abs=1e-12)
    assert series["hi"] == pytest.approx([g.hi], abs=1e-12)


def test_pass_at_k_figure_plots_pass_at_k_and_pass_hat_k_against_k(report):
    (panel,) = figure_data(pass_at_k_figure(report))
    by_label = {s["label"]: s for s in panel["series"]}
    g = report.envs[0]
    at_k = by_label["PyFunc-v0 pass@k"]
    assert at_k["x"] == [1.0, 2.0]
    assert at_k["y"] == [g.pass_at_1.value, g.pass_at_k[2].value]
    assert at_k["hi"] == [g.pass_at_1.hi, g.pass_at_k[2].hi]
    hat = by_label["PyFunc-v0 pass^k"]
    assert hat["y"] == [g.pass_hat_k[1].value, g.pass_hat_k[2].value]


def test_scatter_puts_each_shared_task_at_its_two_scores(stored):
    store = Store(stored, read_only=True)
    a, b = task_scores(store, viewdata.RUN_A), task_scores(store, viewdata.RUN_B)
    (panel,) = figure_data(scatter_figure(a, b))
    (points,) = panel["points"]
    placed = {}
    for (x, y), tasks in zip(points["xy"], points["urls"], strict=True):
        for task in tasks.split(", "):
            placed[tuple(task.split(" "))] = (x, y)
    assert placed == {key: (a[key], b[key]) for key in a}


def test_training_figure_plots_reward_and_each_flag_per_step():
    points = [
        TrainingPoint(step=0, mean_reward=0.1, pass_rate=0.1, flag_rates={"loop": 0.3}),
        TrainingPoint(step=10, mean_reward=0.4, flag_rates={"loop": 0.1, "tests_touched": 0.05}),
    ]
    reward, flags = figure_data(training_figure(points))
    by_label = {s["label"]: s for s in reward["series"]}
    assert by_label["mean reward"]["y"] == [0.1, 0.4]
    assert by_label["pass rate"]["x"] == [0.0]
    rates = {s["label"]: s["y"] for s in flags["series"]}
    assert rates == {"loop": [0.3, 0.1], "tests_touched": [0.0, 0.05]}


def test_png_carries_what_it_shows(report):
    fig = pass_at_1_figure(report)
    data = png_bytes(fig)
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.size[0] >= 400
    assert json.loads(image.text["boxgym"]) == figure_data(fig)


def test_gym_report_plot_writes_a_png_of_the_reports_numbers(stored, tmp_path):
    target = tmp_path / "report.png"
    env = {**os.environ, "GYM_DB_URL": stored}
    run = [GYM, "report", viewdata.RUN_B, "--plot", str(target), "--json"]
    out = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert 20_000 < target.stat().st_size < 500_000
    with Image.open(target) as image:
        assert image.size == (1000, 420)
        left, right = json.loads(image.text["boxgym"])
    env_report = report["envs"][0]
    (series,) = left["series"]
    assert series["y"] == [env_report["pass_at_1"]["value"]]
    assert series["lo"] == pytest.approx([env_report["pass_at_1"]["lo"]], abs=1e-12)
    assert series["hi"] == pytest.approx([env_report["pass_at_1"]["hi"]], abs=1e-12)
    k = {s["label"]: s for s in right["series"]}["PyFunc-v0 pass@k"]
    assert k["y"][1] == env_report["pass_at_k"]["2"]["value"]

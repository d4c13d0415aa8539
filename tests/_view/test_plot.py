"""Plots drawn from the report's numbers, checked by reading back what each figure shows."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import warnings

import pytest
import viewdata
from PIL import Image

from gym._reports._plot import (
    TrainingPoint,
    figure_data,
    pass_at_1_figure,
    pass_at_k_figure,
    png_bytes,
    report_figure,
    save,
    scatter_figure,
    training_figure,
    wilson,
)
from gym._reports._report import Report, build_report, group_stats, task_scores
from gym._store import EpisodeRow, Store

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
    assert reward["bands"] == []  # no episode counts: no interval claimed
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


def _episodes(env_id: str, outcomes: dict[tuple[int, int], str]) -> list[EpisodeRow]:
    """Episodes of one env: (task, sample) -> outcome."""
    return [
        EpisodeRow(
            id=f"{env_id}-{t}-{s}",
            run_id="k1run0000000001",
            env_id=env_id,
            env_version=0,
            task_id=f"task-{t}",
            split="train",
            sample_index=s,
            seed=s,
            policy="noop",
            outcome=outcome,
        )
        for (t, s), outcome in outcomes.items()
    ]


def _report(samples: int, passes: list[int], label: str = "") -> Report:
    """A report of one env: task t passed ``passes[t]`` of its ``samples`` samples."""
    outcomes = {
        (t, s): "pass" if s < c else "fail" for t, c in enumerate(passes) for s in range(samples)
    }
    episodes = _episodes("boxgym/PyFunc-v0", outcomes)
    env = group_stats("boxgym/PyFunc-v0", episodes, {})
    overall = group_stats("all", episodes, {})
    run = "k1run0000000001"
    return Report(run_id=run, label=label, config={}, overall=overall, envs=[env], slices=[])


def test_an_env_with_no_graded_episode_is_drawn_without_a_value():
    """One env all infra_error beside a graded one: every plot crashed (a review helper)."""
    graded = _report(2, [2, 1, 0])
    episodes = _episodes("boxgym/SQL-v0", {(0, 0): "infra_error", (1, 0): "infra_error"})
    report = graded.model_copy(
        update={"envs": [*graded.envs, group_stats("boxgym/SQL-v0", episodes, {})]}
    )
    for draw in (pass_at_1_figure, pass_at_k_figure, report_figure):
        fig = draw(report)
        assert Image.open(io.BytesIO(png_bytes(fig))).format == "PNG"
    (panel,) = figure_data(pass_at_1_figure(report))
    (series,) = panel["series"]
    assert panel["xticklabels"][:2] == ["PyFunc-v0", "SQL-v0"]
    assert math.isnan(series["y"][1]) and math.isnan(series["lo"][1])
    assert series["lo"][0] == pytest.approx(report.envs[0].pass_at_1.lo, abs=1e-12)


def test_pass_at_k_with_k1_is_a_labelled_point_on_the_whole_rate_axis():
    """Issue 28, reproduction 9: k=1 drew a single point on a 0.96-1.04 axis."""
    report = _report(1, [1, 1, 0, 1, 0, 1, 1, 0, 1, 1])
    (panel,) = figure_data(pass_at_k_figure(report))
    bottom, top = panel["ylim"]
    assert bottom <= 0.0 and top >= 1.0 and top - bottom <= 1.2  # rates on [0, 1]
    assert panel["xticks"] == [1.0] and panel["xlim"] == [0.5, 1.5]
    m = report.envs[0].pass_at_1
    assert f"pass@1 = {m.value:.2f} [{m.lo:.2f}, {m.hi:.2f}]" in panel["texts"]
    (point,) = panel["series"]
    assert point["x"] == [1.0] and point["lo"] == pytest.approx([m.lo], abs=1e-12)


def test_every_report_plot_is_titled_with_the_run_id_and_label():
    """Issue 28, reproduction 9: no run id on the plots."""
    report = _report(2, [2, 1, 0], label="smollm2 at $0 cost")
    for draw in (pass_at_1_figure, pass_at_k_figure, report_figure):
        for panel in figure_data(draw(report)):
            assert panel["suptitle"] == "run k1run0000000001 \N{MIDDLE DOT} smollm2 at $0 cost"
            assert panel["xlabel"] and panel["ylabel"] and panel["title"]
            bottom, top = panel["ylim"]
            assert bottom <= 0.0 and top >= 1.0


def test_a_label_with_control_and_bidi_characters_is_drawn_as_escapes():
    """Issue 28, reproduction 10: a label's bell and right-to-left override reached the
    plot (matplotlib warned of a missing glyph; the override would reorder the title)."""
    report = _report(2, [2, 1, 0], label="a\x07b\u202ec")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = report_figure(report)
        png_bytes(figure)
    (panel, *_) = figure_data(figure)
    assert panel["suptitle"] == "run k1run0000000001 \N{MIDDLE DOT} a\\x07b\\u202ec"


def test_pass_at_k_and_pass_hat_k_differ_in_colour_marker_and_line():
    """Issue 28, reproduction 9: pass@k and pass^k were drawn in one colour."""
    (panel,) = figure_data(pass_at_k_figure(_report(3, [3, 2, 1, 0])))
    by_label = {s["label"]: s for s in panel["series"]}
    at_k, hat_k = by_label["PyFunc-v0 pass@k"], by_label["PyFunc-v0 pass^k"]
    assert at_k["color"] != hat_k["color"]
    assert at_k["marker"] != hat_k["marker"]
    assert at_k["linestyle"] != hat_k["linestyle"]
    assert panel["xticks"] == [1.0, 2.0, 3.0]  # k is a whole number


def test_training_figure_draws_a_95_interval_and_whole_steps():
    """Issue 28, reproduction 9: no interval on training reward, fractional step ticks."""
    points = [
        TrainingPoint(step=i, mean_reward=0.2 * i, pass_rate=0.1 * i, episodes=32) for i in range(4)
    ]
    reward, flags = figure_data(training_figure(points, title="train abc"))
    assert reward["suptitle"] == "train abc"
    band = {b["label"]: b for b in reward["bands"]}["mean reward 95%"]
    expected = [wilson(p.mean_reward, 32) for p in points]
    assert band["x"] == [0.0, 1.0, 2.0, 3.0]
    assert band["lo"] == pytest.approx([lo for lo, _ in expected])
    assert band["hi"] == pytest.approx([hi for _, hi in expected])
    assert all(lo <= p.mean_reward <= hi for p, (lo, hi) in zip(points, expected, strict=True))
    assert {b["label"] for b in reward["bands"]} == {"mean reward 95%", "pass rate 95%"}
    for panel in (reward, flags):
        assert panel["xticks"] and all(t == int(t) for t in panel["xticks"])
        assert panel["xlabel"] == "training step"


def test_wilson_interval_matches_its_closed_form():
    assert wilson(1.0, 20) == pytest.approx((20 / (20 + 1.96**2), 1.0))
    lo, hi = wilson(0.5, 20)
    assert (round(lo, 3), round(hi, 3)) == (0.299, 0.701)
    assert all(math.isnan(end) for end in wilson(0.3, 0))  # no episodes, no interval


@pytest.mark.parametrize(("name", "magic"), [("r.svg", b"<?xml"), ("r.pdf", b"%PDF")])
def test_the_extension_names_the_format(tmp_path, name, magic):
    """Issue 28, reproduction 9: every --plot file was a PNG."""
    path = tmp_path / name
    save(pass_at_1_figure(_report(1, [1, 0])), path)
    assert path.read_bytes().startswith(magic)
    if name.endswith(".svg"):
        assert b"<svg" in path.read_bytes()[:2000]


def test_gym_report_plot_jpg_is_refused_in_one_line_before_any_work(tmp_path):
    """Issue 28, reproduction 9: ``--plot r.jpg`` wrote a PNG; now exit 2, one line."""
    env = {**os.environ, "GYM_DB_URL": f"sqlite:///{tmp_path / 'none.db'}"}
    for args in (["report", "nope"], ["train", "grpo", "boxgym/Learn-v0"]):
        out = subprocess.run(
            [GYM, *args, "--plot", str(tmp_path / "r.jpg")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 2, out.stderr
        (line,) = out.stderr.splitlines()  # the store is never opened: no "no run" error
        assert "r.jpg" in line and ".png, .svg or .pdf" in line
        assert not list(tmp_path.iterdir())  # nothing written, not even the store


def test_gym_report_plot_writes_svg_and_pdf(stored, tmp_path):
    env = {**os.environ, "GYM_DB_URL": stored}
    for name, magic in (("r.svg", b"<?xml"), ("new/folder/r.pdf", b"%PDF")):
        run = [GYM, "report", viewdata.RUN_B, "--plot", str(tmp_path / name)]
        out = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        assert (tmp_path / name).read_bytes().startswith(magic)

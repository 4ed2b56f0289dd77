"""``roembed demo`` end to end, and help texts for every command."""
import json

import click
import pytest
from click.testing import CliRunner

from roembed.cli import main


def test_demo_runs_and_finds_the_spammers(tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--quiet", "--top", "3", "--report"])
    assert result.exit_code == 0, result.output + result.stderr
    text = result.stdout
    assert "held-out triplet error" in text and "most suspicious comparisons" in text
    assert "chose loss " in text and ", weighting " in text and "annotator types on (agreement differs between annotators" in text
    assert sum(" votes " in line and "gamma" in line for line in text.splitlines()) == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["test_error"] < 0.15  # clean-data error of this protocol is ~0.05; plain fits get ~0.1+
    assert summary["spammer_recall"] == 1.0 and summary["spammer_precision"] == 1.0
    assert summary["outlier_precision"] > 0.9
    assert summary["chosen"]["loss"] in ("soe", "tste") and summary["chosen"]["lam"] == summary["lam_used"]
    assert {"embedding.png", "outliers.png", "annotators.png", "outliers.csv"} <= {p.name for p in out.iterdir()}
    assert set(summary["files"]) == {p.name for p in out.iterdir()} and "report.html" in summary["files"]
    page = (out / "report.html").read_text(encoding="utf-8")  # --report, as roembed fit has it
    assert "<h1>roembed report: robust of synthetic data (spammers, rate 0.25, seed 0)</h1>" in page


@pytest.mark.parametrize("p_value, annotators, gold, expected", [
    (0.0, "types", 0, "annotator types on (agreement differs between annotators, p < 1e-300)"),
    (3.2e-7, "types", 0, "annotator types on (agreement differs between annotators, p = 3.2e-07)"),
    (0.41, None, 0, "annotator types off (too little evidence that annotators differ: p = 0.41, above 0.01)"),
    (0.012, None, 0, "annotator types off (too little evidence that annotators differ: p = 0.012, above 0.01)"),
    (0.41, "types", 0, "annotator types on (some annotators are contradicted by the others on the queries they "
                       "share; agreement test p = 0.41)"),
    (0.41, "types", 12, "annotator types on (12 responses to known-answer questions anchor them with honest slips "
                        "at 0.07, agreement test p = 0.41)"),
])
def test_the_choice_line_states_the_heterogeneity_p_value(p_value, annotators, gold, expected):
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    fitted = SimpleNamespace(chosen_params_=dict(loss="soe", weighting="net", refine=None, alpha=3e-6, lam=6.0,
                                                 annotators=annotators, annotator_heterogeneity_p=p_value,
                                                 gold_answers=gold, gold_error=0.0712 if gold else None),
                             tuning_results_=[{}] * 7)
    line = describe_choice(fitted)
    assert line.startswith("chose loss soe, weighting net, refinement none, ridge 3e-06, lam 6 (validation on "
                           "held-out queries, 7 candidates)")
    assert line.endswith("; " + expected)


def walk(group, prefix=("roembed",)):
    yield prefix, group
    for name, command in getattr(group, "commands", {}).items():
        yield from walk(command, prefix + (name,))


def test_a_demo_rate_that_is_not_a_number_is_bad_input(tmp_path):
    """--rate nan passed click's FloatRange and ended in make_synthetic's traceback."""
    result = CliRunner().invoke(main, ["demo", "--rate", "nan", "--out", str(tmp_path / "d")])
    assert result.exit_code == 2 and "Invalid value for '--rate': 'nan' is not a number" in result.output
    assert not (tmp_path / "d").exists()


def test_demo_prints_warnings_in_its_words_and_no_nan_scores(tmp_path, monkeypatch):
    """A warning of the fit came out as Python prints it ("/venv/bin/roembed:8: DataWarning: ... sys.exit(run())");
    at --rate 0 the scores read "precision nan, recall nan"."""
    import warnings

    import roembed.experiments as experiments
    from roembed.estimators.robust import RobustOrdinalEmbedding
    from roembed.data.diagnostics import DataWarning

    real, fit = experiments.make_synthetic, RobustOrdinalEmbedding.fit

    def small(**kwargs):  # the demo's data, smaller
        return real(**kwargs, n_objects=20, dim=2, n_train=400, n_validation=10, n_test=200, n_annotators=10)

    def warning_fit(self, *args, **kwargs):
        warnings.warn("a planted note about the data", DataWarning)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(experiments, "make_synthetic", small)
    monkeypatch.setattr(RobustOrdinalEmbedding, "fit", warning_fit)
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "d"), "--quiet", "--rate", "0"])
    assert result.exit_code == 0, result.output
    assert "warning: a planted note about the data" in result.output and "DataWarning" not in result.output
    assert "precision - (nothing flagged), recall - (nothing planted)" in result.output or (
        "recall - (nothing planted)" in result.output and "precision 0.000" in result.output)
    assert "nan" not in result.output
    # summary.json is strict JSON (it held NaN, which jq and JavaScript's JSON.parse refuse): nothing flagged and
    # nothing planted leave precision and recall null
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    summary = json.loads((tmp_path / "d" / "summary.json").read_text(), parse_constant=refuse)
    assert summary["outlier_recall"] is None


def test_every_command_has_help_and_fit_demo_options_too():
    commands = list(walk(main))
    names = {" ".join(p) for p, _ in commands}
    assert {"roembed fit", "roembed demo"} <= names
    for path, command in commands:
        assert (command.help or "").strip(), f"{' '.join(path)} has no help text"
        result = CliRunner().invoke(main, [*path[1:], "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output
        if path[1:] not in (("fit",), ("demo",)):
            continue
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and "--help" not in param.opts:
                assert (param.help or "").strip(), f"{' '.join(path)} {param.opts[0]} has no help"


@pytest.mark.parametrize("args", [[], ["reproduce"]])
def test_a_group_run_alone_shows_its_help(args):
    """`roembed` alone: the usage and the commands on their lines (click >= 8.2 raises it as a usage error,
    which the one-line errors would squeeze into one line)."""
    result = CliRunner().invoke(main, args, prog_name="roembed")
    lines = result.output.splitlines()
    assert result.exit_code in (0, 2) and lines[0].startswith(f"Usage: {' '.join(['roembed', *args])} [OPTIONS]")
    assert "Commands:" in lines and not result.output.startswith("Error")


@pytest.mark.parametrize("command", ["fit", "demo"])
def test_help_mentions_outputs(command):
    text = CliRunner().invoke(main, [command, "--help"]).output
    assert "summary.json" in text or "plots" in text


def test_the_choice_line_says_why_no_refinement_was_tried():
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    chosen = dict(loss="tste", weighting="net", refine=None, alpha=3e-10, lam=0.8)
    rows = [dict(loss="soe", weighting="net", refine=None, outlier_share=0.002),
            dict(loss="tste", weighting="net", refine=None, outlier_share=0.0016)]
    gated = SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=rows)
    assert "refinement none (not tried: outlier shifts on under 1% of the loss weight)" \
        in describe_choice(gated)
    explicit = SimpleNamespace(refine=None, chosen_params_=chosen, tuning_results_=rows)  # the user's None
    assert "not tried" not in describe_choice(explicit)
    tried = SimpleNamespace(refine="auto", chosen_params_=chosen,
                            tuning_results_=rows + [dict(rows[0], refine=2.0, score=0.5)])
    assert "not tried" not in describe_choice(tried)


def test_the_choice_line_says_when_the_refinement_was_taken_over_a_higher_score():
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    rows = [dict(loss="tste", weighting="consensus", refine=None, score=0.64, outlier_share=0.03, given_up=False),
            dict(loss="tste", weighting="consensus", refine=2.0, score=0.63, outlier_share=0.03, given_up=False)]
    chosen = dict(loss="tste", weighting="consensus", refine=2.0, refine_alpha=1e-4, alpha=1e-9, lam=0.8)
    over = SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=rows)
    assert "slope 2 with ridge 0.0001 (over the unrefined fit's higher held-out score: outlier shifts on at " \
           "least 2% of the loss weight)" in describe_choice(over)
    over.chosen_params_ = dict(chosen, refine_ensemble=(1.0, 1.5))
    assert "slope 2 with ridge 0.0001 (the mean of the maps at slopes 2, 3; over the unrefined fit's" \
        in describe_choice(over)
    won = SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=[rows[0], dict(rows[1], score=0.65)])
    assert "over the unrefined" not in describe_choice(won)  # the refinement had the best score itself


def test_the_choice_line_says_when_the_final_fit_ended_lowest_from_another_restart_minimum():
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    chosen = dict(loss="soe", weighting="consensus", refine=None, alpha=3e-6, lam=0.8, final_starts=3, final_start=2)
    rows = [dict(loss="soe", weighting="consensus", refine=None, score=0.8, outlier_share=0.0, given_up=False)]
    line = describe_choice(SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=rows))
    assert "(validation on held-out queries, 1 candidates; the final fit ran from 3 distinct restart minima and " \
           "ended lowest from the one ranked 3 by the plain objective)" in line
    for kept in (dict(chosen, final_start=0), dict(chosen, final_starts=1, final_start=0)):
        assert "restart minima" not in describe_choice(SimpleNamespace(refine="auto", chosen_params_=kept,
                                                                       tuning_results_=rows))


def test_the_choice_line_says_whether_the_stronger_ridge_won_the_folds():
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    chosen = dict(loss="tste", weighting="consensus", refine=None, alpha=2.5e-4, lam=0.7, ridge_check_gain=0.0166)
    rows = [dict(loss="tste", weighting="consensus", refine=None, score=0.7, outlier_share=0.0, given_up=False)]
    line = describe_choice(SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=rows))
    assert "ridge 0.00025" in line
    assert "; few queries per coordinate: a stronger ridge won on 5 folds of held-out queries (+0.0166 agreement))" \
        in line
    lost = dict(chosen, alpha=2.5e-10, ridge_check_gain=-0.0162)
    assert "a stronger ridge lost on 5 folds of held-out queries (-0.0162 agreement)" in \
        describe_choice(SimpleNamespace(refine="auto", chosen_params_=lost, tuning_results_=rows))
    for unchecked in (dict(chosen, ridge_check_gain=None), {k: v for k, v in chosen.items() if k != "ridge_check_gain"}):
        assert "stronger ridge" not in describe_choice(SimpleNamespace(refine="auto", chosen_params_=unchecked,
                                                                       tuning_results_=rows))


def test_the_choice_line_names_the_refinement_ensemble_s_slopes():
    from types import SimpleNamespace

    from roembed.cli._report import describe_choice

    chosen = dict(loss="soe", weighting="consensus", refine=2.0, refine_ensemble=(1.0, 1.5), refine_alpha=1e-4,
                  alpha=3e-6, lam=6.0)
    rows = [dict(refine=None, score=0.6), dict(refine=2.0, score=0.7)]
    line = describe_choice(SimpleNamespace(refine="auto", chosen_params_=chosen, tuning_results_=rows))
    assert "refinement slope 2 with ridge 0.0001 (the mean of the maps at slopes 2, 3), robust-stage ridge 3e-06, lam 6" in line
    single = dict(chosen, refine_ensemble=None)  # a large graph's continued single refinement
    assert "refinement slope 2 with ridge 0.0001, robust-stage ridge 3e-06" in describe_choice(SimpleNamespace(chosen_params_=single, tuning_results_=[]))


def test_the_choice_line_says_why_nothing_was_tuned_on_loose_data(underdetermined):
    import warnings

    from roembed import RobustOrdinalEmbedding
    from roembed.cli._report import describe_choice

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = RobustOrdinalEmbedding(2, random_state=0).fit(underdetermined.train)
        restarted = RobustOrdinalEmbedding(2, random_state=0, n_init=3).fit(underdetermined.train)
        explicit = RobustOrdinalEmbedding(2, loss="ckl", weighting="vote", alpha=1e-4, refine=None,
                                          random_state=0, n_init=1).fit(underdetermined.train)
    assert "chose loss ckl, weighting vote, refinement none, ridge 0.0001" in describe_choice(loose)
    assert "(no tuning, one start: too few queries to pin the map down)" in describe_choice(loose)
    assert "(no tuning, 3 starts: too few queries to pin the map down)" in describe_choice(restarted)
    assert "(no tuning)" in describe_choice(explicit)  # the user's choice: nothing to explain


def test_python_m_roembed_runs_the_command_line(tmp_path):
    """``python -m roembed`` is the ``roembed`` console script, exit codes included (0 for help, 2 for a bad file)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__import__("roembed").__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src}
    shown = subprocess.run([sys.executable, "-m", "roembed", "--help"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0 and "fit" in shown.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text("anchor,closer,farther\n1,2,3\n4,5\n")
    failed = subprocess.run([sys.executable, "-m", "roembed", "fit", str(bad), "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env)
    assert failed.returncode == 2 and "bad.csv line 3" in failed.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, code", [(["--help"], 0), (["--version"], 0), (["fit", "--help"], 0),
                                        (["demo", "--help"], 0), (["report", "--help"], 0), (["reproduce", "--help"], 0),
                                        (["fit", "no-such-file.csv", "--out", "out"], 2),
                                        (["report", "no-such-folder"], 2), (["report", "."], 2)])
def test_help_loads_none_of_the_heavy_libraries(args, code, tmp_path):
    """``roembed --help`` and ``roembed fit --help`` took about 4 s on a 2-core machine, importing pandas,
    scikit-learn, SciPy, numba and matplotlib for a page of text; the commands' options now import click alone
    and the library loads when a command runs, after its input files are found (a misspelt name is answered
    at once; so is a report's folder that is missing or holds no finished run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = ("import sys\n"
              f"sys.argv = ['roembed', *{args!r}]\n"
              "from roembed._entry import run\n"
              "try:\n"
              "    run()\n"
              "finally:\n"
              "    heavy = ('numpy', 'pandas', 'sklearn', 'scipy', 'numba', 'matplotlib', 'bokeh')\n"
              "    print('loaded:', [m for m in heavy if m in sys.modules], file=sys.stderr)\n")
    src = str(Path(__import__("roembed").__file__).resolve().parents[1])
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": src}, cwd=tmp_path)
    if code == 0:
        assert shown.returncode == 0 and shown.stdout.strip()
    else:
        told = {"no-such-file.csv": "no-such-file.csv: no such file",
                "no-such-folder": "no-such-folder: no such folder",
                ".": ".: not a finished roembed run (no summary.json"}
        assert shown.returncode == 2 and told[args[1]] in shown.stderr
    assert shown.stderr.strip().splitlines()[-1] == "loaded: []"


def test_fit_help_states_each_methods_own_iteration_limit():
    """``--max-iter`` has no default of its own (each method keeps its estimator's): the help's numbers are the
    estimators' defaults."""
    import re

    from roembed.estimators.registry import estimator_class

    text = " ".join(CliRunner().invoke(main, ["fit", "--help"]).output.split())
    said = re.search(r"--max-iter INTEGER RANGE Iteration limit of each solve \(default: the method's own, (\d+) for "
                     r"robust, (\d+) for roe, (\d+) for the others\)", text)
    assert said is not None, text
    robust, roe, others = map(int, said.groups())
    assert estimator_class("robust")().max_iter == robust and estimator_class("roe")().max_iter == roe
    choices = next(p for p in main.commands["fit"].params if p.name == "method").type.choices
    assert {estimator_class(m)().max_iter for m in choices if m not in ("robust", "roe")} == {others}

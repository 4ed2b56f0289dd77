"""Fake annotators injected into real crowd data: does the default fit shrug them off?

Data: the THINGS odd-one-out set (``things-odd-one-out-repeated``: 20,000 answers on 1,000
object triples by 325 participants, each answer two triplets).  Per draw, 20% of the real
queries are held out (:func:`roembed.model_selection.holdout_split`, grouped by query);
the test set is the real annotators' answers to them.  Fake annotators then answer the
training questions, 50 answers each (every one on a training query), in one of three ways:

* ``spammer``: the odd one uniformly at random;
* ``inverter``: the object the real crowd chose *least* often as the odd one (always wrong);
* ``lazy``: always the same screen position (drawn per worker), whatever is shown.

Fakes make up 10% or 25% of the training answers.  Per cell, on the same training data:
plain t-STE and CKL in roembed and in cblearn 0.4 (when importable, on the draws
``--cblearn-seeds``: run with the cblearn environment; "best plain" is the best of them on the
*test* set, a favourable choice for them),
the default ``RobustOrdinalEmbedding`` (also with ``annotators=None``, and, with ``--tste-default``,
with ``loss="tste"``), the post-hoc loop :func:`roembed.annotators.fit_with_annotator_reweighting` around the
default (score the annotators after each fit, refit with their weights; issue 17's third column, one fit per
draw, ``reweighting``, with its time over t-STE), dropping the default fit's ``suspect`` annotators
and refitting t-STE, and the oracle (t-STE on the real training answers only).  Also the
suspect rule's recall per kind of fake and the share of real annotators among the flagged
(FDR), the same for the position test (:func:`roembed.annotators.position_bias`, on the training
answers' odd-one-out positions) and for the union of both, and the default fit's time over a plain roembed t-STE fit in the same process.
The suspect columns are also given for the earlier rule (``*_earlier``: "not shown above chance",
now the reported column ``unproven``, flagged instead of "shown below the reference"), on the same fit,
and ``real_flagged_poor`` counts the flagged real participants whose answers agree with the other
participants' majority less than half the time (:func:`majority_agreement`; chance about 1/3, the real
median 0.70): poor workers the "FDR" counts as false discoveries.

With ``--known-answers SHARE`` the default is also fitted with known-answer (gold) marks: a random
``SHARE`` of the training triples whose odd one the real participants' training answers pick with a
majority of at least ``--known-majority`` become known-answer questions with that answer
(:func:`known_answer_marks`); every training response on them, real or fake, is marked right or wrong
(columns ``*_gold``).  A simulation of questions with a clear answer: THINGS has none of its own.

Why the split is by query and not by object triple: each THINGS object occurs in about two
of the 1,000 triples, so a held-out triple's objects are almost unconstrained by the rest
and every method scores near chance (t-STE 0.52 on held-out triples at p = 2); held-out
*queries* keep the other query of the same answer in training, so the test asks whether the
fit reproduces what real people answered, which is what fakes distort.

With ``--fit-seeds K`` roembed's plain fits, the default, the default without ids and the oracle are each
fitted with K estimator seeds per draw and score their mean accuracy (``*_sd``: the SD across seeds): at p = 2
on this set the start alone moves a fit by about 0.01, so one fit per draw is a noisy reading of what a user
gets, and "best plain", the best of single fits chosen on the test set, sits about one SD above their mean.
Their times are the median over the K fits (one fit of a few hundredths of a second is a noisy clock: the
per-cell ratios of one fit per draw moved by up to 0.6 between two runs of the same code).

Prints the table and writes JSON (``--out``, default benchmarks/out/annotators_real.json).
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
THINGS = REPO.parent / "shared/data/things-odd-one-out-repeated"
FAKE_ID = 10_000  # fake annotators get ids from here on (real ids are at most 336)
KINDS = ("spammer", "inverter", "lazy")


def read_answers(path: Path):
    """The real comparisons over all 1,854 THINGS objects and the raw answer table (0-based)."""
    from roembed.data.datasets import load_things

    comparisons = load_things(path, objects="all")
    table = pd.read_csv(path / "test_triplets.csv", sep="\t", header=None).to_numpy()
    shown, odd, who = table[:, :3] - 1, table[:, 3] - 1, table[:, 4]
    return comparisons, shown, odd, who


def fake_answers(kind: str, n_fakes: int, per_fake: int, shown, odd, allowed, rng, first_id: int):
    """``(shown, odd position, annotator)`` of ``n_fakes`` fake workers of one kind.

    Each answers ``per_fake`` distinct triples, seen in the order of a random real showing;
    ``allowed(shown, position)`` says whether an answer stays on training queries.
    """
    key = np.sort(shown, axis=1)
    triples, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    # how often the real crowd chose each object of a triple as the odd one
    odd_obj = shown[np.arange(len(shown)), odd]
    chosen = np.zeros((len(triples), 3))
    for slot in range(3):
        chosen[:, slot] = np.bincount(inverse, weights=(odd_obj == triples[inverse, slot]), minlength=len(triples))
    rows_of = pd.Series(np.arange(len(shown))).groupby(inverse).apply(np.asarray).to_dict()
    out_shown, out_odd, out_who = [], [], []
    for f in range(n_fakes):
        position = rng.integers(3)
        kept = 0
        for t in rng.permutation(len(triples)):
            show = shown[rng.choice(rows_of[t])]
            if kind == "spammer":
                pos = rng.integers(3)
            elif kind == "lazy":
                pos = position
            else:
                counts = chosen[t][np.searchsorted(triples[t], show)]
                pos = rng.choice(np.flatnonzero(counts == counts.min()))
            if not allowed(show, pos):
                continue
            out_shown.append(show)
            out_odd.append(pos)
            out_who.append(first_id + f)
            kept += 1
            if kept == per_fake:
                break
    return np.asarray(out_shown), np.asarray(out_odd), np.asarray(out_who)


def make_draw(path: Path, seed: int, rates, per_fake: int, holdout: float = 0.2):
    """The real train/test split of one draw and, per (kind, rate), the training set with fakes and the
    training answers' ``(odd position, annotator)`` (real answers with a triplet in training, and the fakes')."""
    from roembed.data import Comparisons
    from roembed.data.convert import from_odd_one_out
    from roembed.model_selection import holdout_split

    real, shown, odd, who = read_answers(path)
    train, test = holdout_split(real, holdout, random_state=seed)
    test_keys = set(query_keys(test.quadruplets, real.n_objects).tolist())

    def allowed(show, pos):
        twin = from_odd_one_out(show[None], [pos], n_objects=real.n_objects).quadruplets
        return not any(k in test_keys for k in query_keys(twin, real.n_objects).tolist())

    real_keys = query_keys(real.quadruplets, real.n_objects).reshape(-1, 2)  # rows 2r, 2r + 1: answer r
    in_train = ~np.isin(real_keys, list(test_keys)).all(axis=1)
    cells = {("none", 0.0): train}
    answers = {("none", 0.0): (odd[in_train], who[in_train])}
    n_real = len(who)
    for kind in KINDS:
        for rate in rates:
            rng = np.random.default_rng([seed, KINDS.index(kind), int(rate * 1000)])
            n_fakes = int(round(rate / (1 - rate) * n_real / per_fake))
            s, o, a = fake_answers(kind, n_fakes, per_fake, shown, odd, allowed, rng, first_id=FAKE_ID)
            fakes = from_odd_one_out(s, o, annotator=a, n_objects=real.n_objects, object_names=real.object_names)
            cells[(kind, rate)] = Comparisons.concat([train, fakes])
            answers[(kind, rate)] = (np.concatenate([odd[in_train], o]), np.concatenate([who[in_train], a]))
    used = np.unique(np.concatenate([c.used_objects for c in cells.values()] + [test.used_objects]))
    return {k: keep_objects(c, used) for k, c in cells.items()}, keep_objects(test, used), answers


def known_answer_marks(train, share: float, min_majority: float, seed: int) -> np.ndarray:
    """Gold marks (1 / 0 / NaN per response) on a random ``share`` of the triples of ``train`` whose most
    picked odd one, among the real (not fake) responses there, is picked by at least ``min_majority`` of them
    and by more than any other."""
    quads = train.quadruplets
    triple = np.sort(quads[:, [0, 1, 3]], axis=1)
    key = (triple[:, 0] * train.n_objects + triple[:, 1]) * train.n_objects + triple[:, 2]
    real = train.annotator < FAKE_ID
    counts = pd.DataFrame({"key": key[real], "odd": quads[real, 3]}).value_counts().rename("n").reset_index()
    counts = counts.sort_values(["key", "n"], ascending=[True, False], kind="stable")
    top, runner_up = counts.groupby("key").nth(0).set_index("key"), counts.groupby("key")["n"].nth(1)
    runner_up = pd.Series(runner_up.to_numpy(), index=counts.loc[runner_up.index, "key"]).reindex(top.index)
    total = counts.groupby("key")["n"].sum().reindex(top.index)
    clear = top.index[(top["n"] > runner_up.fillna(0)) & (top["n"] >= min_majority * total)]
    rng = np.random.default_rng([seed, 7])
    chosen = rng.choice(clear, size=min(len(clear), int(share * len(np.unique(key)))), replace=False)
    marked = np.isin(key, chosen)
    gold = np.full(len(train), np.nan)
    gold[marked] = (quads[marked, 3] == top.loc[key[marked], "odd"].to_numpy()).astype(float)
    return gold


def suspect_scores(table, train) -> dict:
    """Recall of the fakes and the real annotators' share among the flagged, from an ``annotators_`` table."""
    flagged = table.loc[table["suspect"], "annotator"].to_numpy()
    fake_ids = np.unique(train.annotator[train.annotator >= FAKE_ID])
    real_flagged = int((flagged < FAKE_ID).sum())
    return {"recall": float(np.isin(fake_ids, flagged).mean()) if len(fake_ids) else None,
            "fdr": real_flagged / len(flagged) if len(flagged) else 0.0, "real_flagged": real_flagged,
            "n_flagged": len(flagged), "n_fakes": len(fake_ids), "flagged": flagged}


def majority_agreement(shown, odd, who) -> pd.Series:
    """Per real participant: the share of their answers that pick the odd one most of the *other*
    participants picked for the same triple (a tie counts as agreeing; chance about 1/3).  A label of
    poor workers that depends on no fit (all answers, training and test)."""
    _, triple = np.unique(np.sort(shown, axis=1), axis=0, return_inverse=True)
    triple = triple.reshape(-1)
    counts = np.zeros((triple.max() + 1, shown.max() + 1), dtype=np.int64)
    np.add.at(counts, (triple, shown[np.arange(len(shown)), odd]), 1)
    shown_counts = counts[triple[:, None], shown]  # (answers, 3): how often each shown object was picked
    rows = np.arange(len(shown))
    own = shown_counts[rows, odd] - 1
    shown_counts[rows, odd] = -1
    return pd.Series(own >= shown_counts.max(axis=1)).groupby(who).mean()


def query_keys(quads, n_objects: int) -> np.ndarray:
    """One integer per row, shared by both directions of a comparison (its query)."""
    from roembed.data.comparisons import canonical_quadruplets

    def code(q):
        q = canonical_quadruplets(q)
        return ((q[:, 0] * n_objects + q[:, 1]) * n_objects + q[:, 2]) * n_objects + q[:, 3]

    quads = np.asarray(quads)
    return np.minimum(code(quads), code(quads[:, [2, 3, 0, 1]]))


def keep_objects(comparisons, used):
    """The same responses (and their annotators and screen positions) over the objects ``used`` only
    (sorted; renumbered in order)."""
    return comparisons.take_objects(used)


def timed(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est = fit()
        return est, time.perf_counter() - start


def score(X, test) -> float:
    from roembed.objective import quadruplet_distances

    d_near, d_far = quadruplet_distances(X, test.quadruplets)
    return float(np.average(d_near < d_far, weights=test.weight))


def fit_seeds(seed: int, n: int) -> list[int]:
    """The estimator seeds of a draw: the draw's own, then ``seed + 1000 k``."""
    return [seed + 1000 * k for k in range(n)]


def seeded_fits(make, seeds: list[int], test):
    """``(mean accuracy, SD across seeds, first estimator, seconds per seed)`` of ``make(random_state)`` fitted
    once per seed: at p = 2 on this set a fit moves by about 0.01 with its start alone."""
    scores, seconds, first = [], [], None
    for s in seeds:
        est, sec = timed(lambda: make(s))
        first = first or est
        scores.append(score(est.embedding_, test))
        seconds.append(sec)
    return float(np.mean(scores)), float(np.std(scores)), first, seconds


def plain_fits(train, test, p: int, seed: int, with_cblearn: bool, n_fit_seeds: int = 1) -> dict:
    """Test accuracy (and fit seconds) of the plain losses in roembed (mean over ``n_fit_seeds`` seeds) and
    cblearn (one fit)."""
    from roembed import CKL, TSTE

    out = {}
    for name, cls in (("tste", TSTE), ("ckl", CKL)):
        mean, sd, _, secs = seeded_fits(lambda s: cls(p, random_state=s).fit(train), fit_seeds(seed, n_fit_seeds), test)
        out[f"roembed_{name}"], out[f"roembed_{name}_sd"] = mean, sd
        out[f"roembed_{name}_s"], out[f"roembed_{name}_s_seeds"] = float(np.median(secs)), secs
    if with_cblearn:
        import cblearn.embedding as cbe

        for name, cls in (("tste", cbe.TSTE), ("ckl", cbe.CKL)):
            est, sec = timed(lambda: cls(p, random_state=seed).fit(train.triplets, n_objects=train.n_objects))
            out[f"cblearn_{name}"], out[f"cblearn_{name}_s"] = score(est.embedding_, test), sec
    return out


def cell_run(train, test, answers, kind: str, rate: float, p: int, seed: int, oracle: float,
             with_cblearn: bool, with_tste_default: bool = False, poor=(), known=(0.0, 0.8),
             n_fit_seeds: int = 1) -> dict:
    """Every method on one training set with fakes of one kind (``kind="none"``: without fakes).  roembed's
    plain fits and the default with and without annotator ids score the mean over ``n_fit_seeds`` estimator
    seeds, and their times are the median over those seeds' fits (``*_s_seeds`` lists them; before the
    thirty-fifth session the first seed's fit alone); the suspect columns and the other methods are the first
    seed's fits."""
    from roembed import TSTE, RobustOrdinalEmbedding
    from roembed.annotators import fit_with_annotator_reweighting, position_bias

    row = {"kind": kind, "rate": rate, "seed": seed, "n_train": len(train), "oracle": oracle}
    seeds = fit_seeds(seed, n_fit_seeds)
    row.update(plain_fits(train, test, p, seed, with_cblearn, n_fit_seeds))
    plain = [row[k] for k in ("roembed_tste", "roembed_ckl", "cblearn_tste", "cblearn_ckl") if k in row]
    row["best_plain"] = max(plain)
    row["default"], row["default_sd"], est, secs = seeded_fits(
        lambda s: RobustOrdinalEmbedding(p, random_state=s).fit(train), seeds, test)
    row["default_s"], row["default_s_seeds"] = float(np.median(secs)), secs
    row["time_ratio"] = row["default_s"] / row["roembed_tste_s"]
    table = est.annotators_
    scores = suspect_scores(table, train)
    flagged, real_flagged = scores.pop("flagged"), scores["real_flagged"]
    fake_ids = np.unique(train.annotator[train.annotator >= FAKE_ID])
    row.update(scores)
    row["real_flagged_share"] = real_flagged / int((table["annotator"] < FAKE_ID).sum())
    row["real_flagged_poor"] = int(np.isin(flagged, poor).sum())
    row["real_unproven"] = int((table["unproven"] & (table["annotator"] < FAKE_ID)).sum())
    # the earlier rule: flag "not shown above chance" (now the column unproven) instead of "shown below the reference"
    earlier = table["inverts"] | table["unproven"] | (table["p_follows"] < 0.5 if "p_follows" in table else False)
    flagged_before = table.loc[earlier, "annotator"].to_numpy()
    row["recall_earlier"] = float(np.isin(fake_ids, flagged_before).mean()) if len(fake_ids) else None
    row["real_flagged_earlier"] = int((flagged_before < FAKE_ID).sum())
    row["fdr_earlier"] = row["real_flagged_earlier"] / len(flagged_before) if len(flagged_before) else 0.0
    lazy = position_bias(*answers, n_positions=3)
    lazy_ids = lazy.loc[lazy["lazy"], "annotator"].to_numpy()
    row["position_recall"] = float(np.isin(fake_ids, lazy_ids).mean()) if len(fake_ids) else None
    row["position_real_flagged"] = int((lazy_ids < FAKE_ID).sum())
    both = np.union1d(flagged, lazy_ids)
    row["recall_with_position"] = float(np.isin(fake_ids, both).mean()) if len(fake_ids) else None
    row["fdr_with_position"] = float((both < FAKE_ID).sum() / len(both)) if len(both) else 0.0
    # the same estimator ignoring annotator ids (the stage's effect), and with the t-STE loss (the loss's)
    row["default_no_ids"], row["default_no_ids_sd"], _, _ = seeded_fits(
        lambda s: RobustOrdinalEmbedding(p, random_state=s, annotators=None).fit(train), seeds, test)
    if with_tste_default:
        robust_tste, _ = timed(lambda: RobustOrdinalEmbedding(p, loss="tste", random_state=seed).fit(train))
        row["robust_tste"] = score(robust_tste.embedding_, test)
    if known[0] > 0:  # the default with known-answer marks on some training questions
        marked = train.with_gold(known_answer_marks(train, *known, seed))
        est_gold, _ = timed(lambda: RobustOrdinalEmbedding(p, random_state=seed).fit(marked))
        gold_scores = suspect_scores(est_gold.annotators_, marked)
        row["default_gold"] = score(est_gold.embedding_, test)
        row.update({f"{k}_gold": gold_scores[k] for k in ("recall", "fdr", "real_flagged")})
        row["gold_error"] = est_gold.chosen_params_["gold_error"]
        row["gold_responses"] = int(np.count_nonzero(~np.isnan(marked.gold)))
    kept = ~np.isin(train.annotator, flagged)
    refit, _ = timed(lambda: TSTE(p, random_state=seed).fit(train[kept]))
    row["drop_suspects"] = score(refit.embedding_, test)
    reweighted, sec = timed(lambda: fit_with_annotator_reweighting(RobustOrdinalEmbedding(p, random_state=seed), train,
                                                                   log=lambda line: None))
    row["reweighting"] = score(reweighted.estimator.embedding_, test)
    row["reweighting_time_ratio"] = sec / row["roembed_tste_s"]
    gap = row["oracle"] - row["best_plain"]
    row["gap"] = gap
    row["gap_closed"] = (row["default"] - row["best_plain"]) / gap if gap > 0 else None
    return row


def summarise(rows: list[dict]) -> list[dict]:
    frame = pd.DataFrame(rows)
    cols = ["best_plain", "roembed_tste", "roembed_ckl", "cblearn_tste", "cblearn_ckl", "default", "default_no_ids",
            "default_gold", "recall_gold", "fdr_gold", "real_flagged_gold", "gold_error",
            "robust_tste", "reweighting", "drop_suspects",
            "oracle", "gap", "gap_closed", "default_minus_best_plain", "recall", "fdr", "real_flagged_share",
            "real_flagged", "real_flagged_poor", "real_unproven", "recall_earlier", "fdr_earlier",
            "real_flagged_earlier", "position_recall", "position_real_flagged", "recall_with_position", "fdr_with_position",
            "n_fakes", "time_ratio", "reweighting_time_ratio", "roembed_tste_s", "default_s", "default_sd", "roembed_tste_sd", "roembed_ckl_sd"]
    frame["default_minus_best_plain"] = frame["default"] - frame["best_plain"]
    cols = [c for c in cols if c in frame]
    summary = []
    for (kind, rate), group in frame.groupby(["kind", "rate"], sort=False):
        med = group[cols].apply(pd.to_numeric, errors="coerce").median(skipna=True)
        row = {"cell": f"{kind} {rate:.0%}" if rate else "no fakes", "draws": len(group)}
        row.update({c: (None if pd.isna(v) else float(v)) for c, v in med.items()})
        row["worst_default_minus_best_plain"] = float(group["default_minus_best_plain"].min())
        summary.append(row)
    return summary


COLUMNS = {"cell": "", "draws": "d", "best_plain": ".4f", "roembed_tste": ".4f", "roembed_ckl": ".4f",
           "cblearn_tste": ".4f", "cblearn_ckl": ".4f", "default": ".4f", "default_no_ids": ".4f",
           "robust_tste": ".4f", "reweighting": ".4f", "drop_suspects": ".4f", "oracle": ".4f", "default_gold": ".4f",
           "recall_gold": ".2f", "fdr_gold": ".2f", "real_flagged_gold": ".0f", "gold_error": ".3f",
           "gap_closed": ".2f", "default_minus_best_plain": "+.4f", "worst_default_minus_best_plain": "+.4f",
           "recall": ".2f", "fdr": ".2f", "real_flagged_share": ".3f", "real_flagged": ".0f", "real_flagged_poor": ".0f",
           "real_unproven": ".0f", "recall_earlier": ".2f", "fdr_earlier": ".2f", "real_flagged_earlier": ".0f",
           "position_recall": ".2f",
           "position_real_flagged": ".0f", "recall_with_position": ".2f", "fdr_with_position": ".2f",
           "default_sd": ".4f", "time_ratio": ".1f", "reweighting_time_ratio": ".1f"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=THINGS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.25])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--per-fake", type=int, default=50, help="answers per fake annotator")
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--cblearn-seeds", type=int, nargs="*", default=[0],
                        help="draws on which cblearn is fitted too (its t-STE takes 20-30 s a cell here); "
                             "the flag with no draws fits roembed's plain losses only")
    parser.add_argument("--tste-default", action="store_true", help="also RobustOrdinalEmbedding(loss='tste')")
    parser.add_argument("--known-answers", type=float, default=0.0, metavar="SHARE",
                        help="also fit the default with known-answer marks on this share of the training triples")
    parser.add_argument("--known-majority", type=float, default=0.8,
                        help="known answers only where the real participants agree at least this much")
    parser.add_argument("--fit-seeds", type=int, default=1,
                        help="estimator seeds per draw for roembed's plain fits, the default, its no-ids twin and "
                             "the oracle (mean accuracy; the first seed's fits give the suspect columns and times)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/out/annotators_real.json")
    args = parser.parse_args()
    with_cblearn = bool(args.cblearn_seeds)
    if with_cblearn:
        try:
            import cblearn  # noqa: F401
        except ImportError:
            print("cblearn not importable: plain fits in roembed only (run with the cblearn environment)")
            with_cblearn = False
    from roembed import TSTE
    from _results import finish

    _, shown, odd, who = read_answers(args.data)
    majority = majority_agreement(shown, odd, who)
    poor = majority.index[majority < 0.5].to_numpy()  # the real median is about 0.70
    rows = []
    for seed in args.seeds:
        cells, test, answers = make_draw(args.data, seed, args.rates, args.per_fake)
        clean = cells[("none", 0.0)]
        oracle = seeded_fits(lambda s: TSTE(args.dim, random_state=s).fit(clean), fit_seeds(seed, args.fit_seeds),
                             test)[0]
        for (kind, rate), train in cells.items():
            if kind != "none" and kind not in args.kinds:
                continue
            row = cell_run(train, test, answers[(kind, rate)], kind, rate, args.dim, seed, oracle,
                           with_cblearn and seed in args.cblearn_seeds, args.tste_default, poor,
                           (args.known_answers, args.known_majority), args.fit_seeds)
            rows.append(row)
            print(f"seed {seed} {kind} {rate:.0%}: best plain {row['best_plain']:.4f} default {row['default']:.4f} "
                  f"drop {row['drop_suspects']:.4f} oracle {oracle:.4f} recall {row['recall']} fdr {row['fdr']:.2f} "
                  f"time x{row['time_ratio']:.1f}", flush=True)
    loadavg = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else None
    finish(args.out, args, rows, summarise(rows), COLUMNS, loadavg=loadavg)


if __name__ == "__main__":
    main()

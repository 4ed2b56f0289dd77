"""The Dask recipe of docs/uncertainty.md, on a local cluster: same results as serial, data scattered once."""
import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")

from roembed import RobustOrdinalEmbedding  # noqa: E402
from roembed.dimension import select_dimension  # noqa: E402
from roembed.experiments import make_synthetic  # noqa: E402
from roembed.uncertainty import bootstrap  # noqa: E402


@pytest.fixture(scope="module")
def client():
    import dask

    # forked workers start in a fraction of a second (spawned ones re-import numba, scikit-learn, ...)
    with dask.config.set({"distributed.worker.multiprocessing-method": "fork"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                           env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                                "MKL_NUM_THREADS": "1"})
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_bootstrap_and_dimension_selection_on_a_local_cluster_match_serial(client, tmp_path):
    store = tmp_path / "store"
    data = make_synthetic(n_objects=15, dim=2, n_train=400, n_validation=10, votes=(2, 4), n_annotators=5,
                          n_test=10, random_state=0)
    est = RobustOrdinalEmbedding(2, max_iter=100, random_state=0)
    serial = bootstrap(est, data.train, 4, random_state=3, n_jobs=1)
    with joblib.parallel_config(backend="dask", scatter=[data.train]):
        on_cluster = bootstrap(est, data.train, 4, random_state=3, n_jobs=-1, fitted=serial.estimator, store=store)
        sel = select_dimension(est, data.train, dimensions=[1, 2, 3], cv=2, patience=None, random_state=0)
    assert np.array_equal(serial.replicates, on_cluster.replicates)
    assert np.array_equal(serial.oob_errors, on_cluster.oob_errors)
    assert serial.annotators().equals(on_cluster.annotators())
    # the parent stored the replicates as they came back from the workers; a rerun reads them all
    reread = bootstrap(est, data.train, 4, random_state=3, fitted=serial.estimator, store=store)
    assert reread.n_from_store == 4 and np.array_equal(serial.replicates, reread.replicates)
    sel_serial = select_dimension(est, data.train, dimensions=[1, 2, 3], cv=2, patience=None, random_state=0)
    assert sel.table.drop(columns="fold_errors").equals(sel_serial.table.drop(columns="fold_errors"))
    # both workers took part, and the comparisons travelled once (scattered), not with every task
    workers = client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.executed_count)
    assert len(workers) == 2 and all(v > 0 for v in workers.values())

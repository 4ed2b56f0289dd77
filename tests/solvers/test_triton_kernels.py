"""The CUDA path's fused Triton kernels against the eager torch passes, run in Triton's interpreter on the
CPU (``TRITON_INTERPRET=1``, set before Triton is imported: a subprocess), so they are tested where no GPU
is; tests/solvers/test_torch_lbfgs.py runs them compiled on a CUDA device."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.torch

CHECK = r"""
import json
import numpy as np, torch
from roembed.solvers import torch_lbfgs, triton_kernels

rng, rows = np.random.default_rng(0), []
for p, n_edges in [(1, 1), (3, 7), (10, 5000), (50, 4097)]:
    for dtype in (torch.float64, torch.float32):
        X = torch.tensor(rng.standard_normal((40, p)), dtype=dtype)
        q = torch.tensor(rng.integers(0, 40, size=(n_edges, 4)), dtype=torch.int32)
        near, far = triton_kernels.edge_sq_distances(X, q)
        ref_near, ref_far = torch_lbfgs.edge_sq_distances(X, q)
        g_near, g_far = torch.randn(n_edges, dtype=dtype), torch.randn(n_edges, dtype=dtype)
        grad = triton_kernels.edge_adjoint(X, q, g_near, g_far, torch.full_like(X, 0.5))
        ref = torch_lbfgs.edge_adjoint(X, q, g_near, g_far, torch.full_like(X, 0.5))
        rows.append(dict(p=p, edges=n_edges, dtype=str(dtype),
                         distances=float(max((near - ref_near).abs().max(), (far - ref_far).abs().max())
                                         / ref_near.abs().max().clamp(min=1e-300)),
                         gradient=float((grad - ref).abs().max() / (ref - 0.5).abs().max()),
                         shapes=[list(near.shape), list(grad.shape)]))
print(json.dumps(rows))
"""


def test_triton_kernels_in_the_interpreter_match_the_eager_passes():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(rows) == 8
    for row in rows:
        tol = 1e-12 if row["dtype"] == "torch.float64" else 1e-5
        assert row["distances"] <= tol and row["gradient"] <= tol, row
        assert row["shapes"] == [[row["edges"]], [40, row["p"]]]

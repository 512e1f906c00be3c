"""backends/mpi, the process world, on real ranks under mpiexec."""

import subprocess
import sys
import textwrap

from mpirun import needs_mpi, run_ranks


def test_world_of_one_outside_mpiexec():
    # in a child process: MPI's singleton start must not happen in the pytest process
    # (its forked DataLoader workers would inherit an initialised MPI)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent('''
        import numpy as np
        from functorch_core.backends import mpi
        w = mpi.init()
        assert (w.rank, w.size) == (0, 1) and mpi.is_initialized()
        x = np.arange(3.0)
        np.testing.assert_array_equal(mpi.all_reduce(x), x)
        assert mpi.all_gather(x).shape == (1, 3)
        print("ok")
    ''')], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


@needs_mpi
def test_array_collectives_on_two_ranks():
    out = run_ranks('''
        import numpy as np
        from functorch_core.backends import mpi
        w = mpi.init()
        x = np.arange(3.0) + w.rank
        report([w.rank, w.size, mpi.all_reduce(x).tolist(), mpi.all_reduce(x, "max").tolist(),
                mpi.all_gather(x).tolist(), mpi.broadcast(x, 1).tolist(),
                mpi.reduce_scatter(np.stack([x, 2 * x])).tolist()])
    ''', n=2, timeout=60)
    for r in range(2):
        assert out[r] == [[r, 2, [1.0, 3.0, 5.0], [1.0, 2.0, 3.0],
                           [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]], [1.0, 2.0, 3.0],
                           [[1.0, 3.0, 5.0], [2.0, 6.0, 10.0]][r]]]

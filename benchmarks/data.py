"""DataPipe throughput: functorch_core.data against TorchData 0.9 + torch's DataLoader.

Run from the repository root: ``python3 benchmarks/data.py [--quick]``.

(a) per-item overhead: ``IterableWrapper(range(N)).map(f).filter(g).batch(64).collate()``
    in this process (functorch_core collates to NumPy arrays, TorchData to tensors); a
    hand-written generator doing the same work is the floor.
(b) CSV files -> parse -> shuffle -> batch, in this process.
(c) WebDataset-style tar shards -> members -> samples -> decode -> shuffle -> batch ->
    collate through a DataLoader with 2 worker processes (torch: ``torch.utils.data.DataLoader``
    over the TorchData pipe, which shards it at ``sharding_filter`` as ours does).

Medians over repeats of full passes, one process, ratios to TorchData; TorchData rows read
"not installed" where ``torchdata`` or ``torch`` cannot be imported.
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _timing import median_time, report, result

from functorch_core.data import DataLoader
from functorch_core.data.datapipes import iter as fi


def f(x):
    return x * 3


def g(x):
    return x % 5 != 0


def read_member(pair):
    path, stream = pair
    try:
        return path, stream.read()
    finally:
        stream.close()


def decode(sample):
    return np.load(io.BytesIO(sample[".npy"])), int(sample[".cls"])


def torch_decode(sample):
    import torch
    x, y = decode(sample)
    return torch.from_numpy(x), y


def torchdata_modules():
    try:
        import torch  # noqa: F401
        import torchdata.datapipes.iter as td
    except Exception:  # an import of torchdata can fail in many ways with a newer torch
        return None
    return td


# -- (a) -------------------------------------------------------------------------------------
def handwritten(n):
    batch, out = [], 0
    for x in range(n):
        y = f(x)
        if g(y):
            batch.append(y)
            if len(batch) == 64:
                out += len(np.asarray(batch))
                batch = []
    if batch:
        out += len(np.asarray(batch))
    return out


def drain(it):
    n = 0
    for _ in it:
        n += 1
    return n


def bench_overhead(n, repeats, td):
    rows = {"hand-written generator + np.asarray": median_time(lambda: handwritten(n), repeats)}
    ours = fi.IterableWrapper(range(n)).map(f).filter(g).batch(64).collate()
    rows["functorch_core"] = median_time(lambda: drain(ours), repeats)
    theirs = None
    if td is not None:
        theirs = td.IterableWrapper(range(n)).map(f).filter(g).batch(64).collate()
        rows["TorchData 0.9"] = median_time(lambda: drain(theirs), repeats)
    else:
        rows["TorchData 0.9"] = None
    report(f"(a) map/filter/batch(64)/collate over range({n}), per pass", rows,
           "TorchData 0.9" if td is not None else "hand-written generator + np.asarray")
    return rows


# -- (b) -------------------------------------------------------------------------------------
def write_csv(folder, files, rows_per_file, cols=8):
    rng = np.random.default_rng(0)
    for i in range(files):
        table = rng.standard_normal((rows_per_file, cols))
        np.savetxt(os.path.join(folder, f"part-{i:03d}.csv"), table, delimiter=",", fmt="%.6f")


def csv_pipe(m, folder):
    return (m.FileLister(folder, "*.csv").open_files().parse_csv()
            .shuffle(buffer_size=1000).batch(64))


def bench_csv(folder, repeats, td):
    rows = {"functorch_core": median_time(lambda: drain(csv_pipe(fi, folder)), repeats)}
    rows["TorchData 0.9"] = median_time(lambda: drain(csv_pipe(td, folder)), repeats) \
        if td is not None else None
    return rows


# -- (c) -------------------------------------------------------------------------------------
def write_shards(folder, shards, per_shard):
    rng = np.random.default_rng(0)
    for s in range(shards):
        with tarfile.open(os.path.join(folder, f"shard-{s}.tar"), "w") as tar:
            for i in range(per_shard):
                buf = io.BytesIO()
                np.save(buf, rng.standard_normal(64).astype(np.float32))
                for name, data in ((f"{i:06d}.npy", buf.getvalue()), (f"{i:06d}.cls", b"3")):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def shard_pipe(m, folder, decoder):
    return (m.FileLister(folder, "*.tar").shuffle().sharding_filter().open_files(mode="rb")
            .load_from_tar().map(read_member).webdataset().map(decoder)
            .shuffle(buffer_size=500).batch(64))


def bench_shards(folder, repeats, td):
    def ours():
        loader = DataLoader(shard_pipe(fi, folder, decode).collate(), num_workers=2, seed=0)
        return drain(loader)

    rows = {"functorch_core DataLoader(2 workers)": median_time(ours, repeats)}
    if td is not None:
        import torch.utils.data as tud

        def theirs():
            pipe = shard_pipe(td, folder, torch_decode)
            return drain(tud.DataLoader(pipe, batch_size=None, num_workers=2,
                                        collate_fn=tud.default_collate))

        rows["TorchData 0.9 + torch DataLoader(2)"] = median_time(theirs, repeats)
    else:
        rows["TorchData 0.9 + torch DataLoader(2)"] = None
    return rows


def main():
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 5
    warnings.filterwarnings("ignore")  # TorchData's deprecation notices
    td = torchdata_modules()
    if td is None:
        print("torchdata/torch not importable: only the hand-written baseline is compared")
    n = 200_000 if quick else 1_000_000
    a = bench_overhead(n, repeats, td)
    with tempfile.TemporaryDirectory() as folder:
        files, per_file = (10, 2000) if quick else (20, 5000)
        write_csv(folder, files, per_file)
        b = bench_csv(folder, repeats, td)
        report(f"(b) {files} CSV files x {per_file} rows x 8 cols -> parse_csv -> shuffle -> "
               "batch(64), per pass", b, "TorchData 0.9" if td else "functorch_core")
    with tempfile.TemporaryDirectory() as folder:
        shards, per_shard = (4, 1000) if quick else (8, 2000)
        write_shards(folder, shards, per_shard)
        c = bench_shards(folder, repeats, td)
        report(f"(c) {shards} tar shards x {per_shard} samples -> webdataset -> decode -> "
               "shuffle -> batch(64) -> collate, DataLoader with 2 workers, per epoch", c,
               "TorchData 0.9 + torch DataLoader(2)" if td else
               "functorch_core DataLoader(2 workers)")
    if td is not None:
        c_ratio = (c["TorchData 0.9 + torch DataLoader(2)"]
                   / c["functorch_core DataLoader(2 workers)"])
        print("\nthroughput vs TorchData (higher is better): "
              f"(a) {a['TorchData 0.9'] / a['functorch_core']:.2f}x, "
              f"(b) {b['TorchData 0.9'] / b['functorch_core']:.2f}x, (c) {c_ratio:.2f}x")
    result(f"data: map/filter/batch/collate, {n} items", a["functorch_core"],
           torch=a["TorchData 0.9"])
    result("data: CSV parse/shuffle/batch", b["functorch_core"], torch=b["TorchData 0.9"])
    result("data: tar shards, 2 workers", c["functorch_core DataLoader(2 workers)"],
           torch=c["TorchData 0.9 + torch DataLoader(2)"])


if __name__ == "__main__":
    main()

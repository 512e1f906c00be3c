"""A DataPipe pipeline feeding a jit-compiled training step, resumed mid-epoch.

The shipped digits data is written to a temporary folder as WebDataset-style
tar shards (``000017.npy`` + ``000017.cls`` per sample) for training and as
CSV files for testing. The training pipeline expands the shard names,
shuffles and shards them across workers, reads the tar members, groups them
into samples, decodes, shuffles the samples, batches and collates them into
NumPy arrays; a DataLoader runs it in 2 worker processes and feeds a
``jit``-compiled SGD step. Half-way through an epoch the loader's
``state_dict`` is saved (as JSON), and a new loader resumes from it with exactly
the batches the first one had still to deliver.

Run: python examples/data_pipeline.py
"""

import io
import json
import os
import tarfile
import tempfile
import time

# The matrices here are small: BLAS threads only add overhead (a lot on a busy machine).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from _digits import load_digits
from quickstart import init_params, loss, predict

import functorch_core as fc
from functorch_core.data import DataLoader
from functorch_core.data.datapipes.iter import FileLister, IterableWrapper

SHARDS, TEST_FILES, BATCH = 4, 2, 64


# -- writing the data out -------------------------------------------------------------------
def write_shards(folder, x, y):
    """Training samples as WebDataset tar shards: ``<index>.npy`` (pixels), ``<index>.cls``."""
    for s, part in enumerate(np.array_split(np.arange(len(x)), SHARDS)):
        with tarfile.open(os.path.join(folder, f"train-{s}.tar"), "w") as tar:
            for i in part:
                buf = io.BytesIO()
                np.save(buf, x[i])
                for name, data in ((f"{i:06d}.npy", buf.getvalue()),
                                   (f"{i:06d}.cls", str(int(y[i])).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def write_csv(folder, x, y):
    for s, part in enumerate(np.array_split(np.arange(len(x)), TEST_FILES)):
        with open(os.path.join(folder, f"test-{s}.csv"), "w") as f:
            f.write(",".join([f"p{j}" for j in range(64)] + ["label"]) + "\n")
            for i in part:
                f.write(",".join([f"{v:.6g}" for v in x[i]] + [str(int(y[i]))]) + "\n")


# -- the pipelines (module-level functions, so worker processes can unpickle them) --------------
def decode_sample(sample):
    """A WebDataset dict -> (pixels float32[64], label int64, sample index int64)."""
    pixels = np.load(io.BytesIO(sample[".npy"]))
    index = int(os.path.basename(sample["__key__"]))
    return pixels, np.int64(int(sample[".cls"])), np.int64(index)


def csv_row(row):
    return np.asarray(row[:64], np.float32), np.int64(row[64])


def train_pipeline(folder):
    shards = IterableWrapper([os.path.join(folder, f"train-{{0..{SHARDS - 1}}}.tar")])
    return (shards.shard_expand()
            .shuffle()                    # shard order: the same in every worker (seeded)
            .sharding_filter()            # each worker reads its own shards
            .open_files(mode="rb")
            .load_from_tar()
            .read_from_stream()           # (name, stream) -> (name, bytes)
            .webdataset()
            .map(decode_sample)
            .shuffle(buffer_size=300)     # samples within a worker's stream
            .batch(BATCH)
            .collate())


def test_pipeline(folder):
    return (FileLister(folder, "test-*.csv")
            .open_files()
            .parse_csv(skip_lines=1)
            .map(csv_row)
            .batch(256)
            .collate())


# -- the compiled step (quickstart.py's MLP and loss) -------------------------------------------
def sgd_step(params, x, onehot):
    value, grads = fc.value_and_grad(loss)(params, x, onehot)
    return value, fc.tree_map(lambda p, g: p - 0.5 * g, params, grads)


def main():
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits()
    eye = np.eye(10, dtype=np.float32)
    step = fc.jit(sgd_step)
    params = init_params(np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as folder:
        write_shards(folder, x_train, y_train)
        write_csv(folder, x_test, y_test)
        print(f"wrote {len(x_train)} training samples as {SHARDS} tar shards and "
              f"{len(x_test)} test rows as {TEST_FILES} CSV files")
        pipe = train_pipeline(folder)
        loader = DataLoader(pipe, num_workers=2, seed=0)

        # epoch 0, with a state_dict saved half-way through
        seen, after_save, state = [], [], None
        losses = []
        for b, (x, y, idx) in enumerate(loader):
            value, params = step(params, x, eye[y])
            losses.append(float(value))
            seen.extend(idx.tolist())
            if state is not None:
                after_save.append(idx.tolist())
            if b == 5:
                state = json.dumps(loader.state_dict())
        assert sorted(seen) == list(range(len(x_train))), "a sample was lost or repeated"
        print(f"epoch 0: {len(seen)} samples in {b + 1} batches from 2 workers, each sample "
              f"exactly once; mean loss {np.mean(losses):.4f}")

        resumed = DataLoader(train_pipeline(folder), num_workers=2, seed=0)
        resumed.load_state_dict(json.loads(state))
        rest = [idx.tolist() for _, _, idx in resumed]
        assert rest == after_save, "the resumed loader did not continue where it stopped"
        print(f"resumed from the state_dict saved after batch 5: the {len(rest)} remaining "
              "batches are identical to the uninterrupted run")

        for epoch in range(1, 4):
            loader.set_epoch(epoch)
            losses = []
            for x, y, _ in loader:
                value, params = step(params, x, eye[y])
                losses.append(float(value))
            print(f"epoch {epoch}: mean loss {np.mean(losses):.4f}")

        correct = total = 0
        for x, y in test_pipeline(folder):
            correct += int(np.sum(np.argmax(predict(params, x), axis=1) == y))
            total += len(y)
    print(f"test accuracy: {correct / total:.3f} on {total} CSV rows "
          f"({time.perf_counter() - start:.1f} s in all)")
    assert correct / total > 0.9


if __name__ == "__main__":
    main()

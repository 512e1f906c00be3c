"""Every deliberate difference from TorchData 0.9's DataPipes, with its reason: the one table.

A name is ``IterDataPipe.<functional name>``, ``MapDataPipe.<functional name>``, or
``datapipes.iter.<Class>`` / ``datapipes.map.<Class>``. ``kind`` is

* ``missing``: TorchData has the name, functorch_core.data does not;
* ``signature``: the constructor takes arguments TorchData's does not (every TorchData call
  still works);
* ``behaviour``: the pipe behaves otherwise than TorchData's for the same call (the
  differential test checks the TorchData side of each of these still holds).

``tests/data/test_torchdata_registry.py`` checks this table against the recorded TorchData
registry (a name not listed must match) and that docs/data.md shows it as ``markdown()``
writes it; ``tests/data/test_torchdata_differential.py`` checks the ``behaviour`` rows against
TorchData itself where it is installed. Print the docs section with
``python tests/data/torchdata_differences.py``.
"""

from typing import NamedTuple


class Difference(NamedTuple):
    names: tuple[str, ...]
    kind: str
    reason: str


# One block per row: "kind: names, ..." then "-- reason"; blocks are separated by a blank line.
_TABLE = """
missing: IterDataPipe.load_from_rar, datapipes.iter.RarArchiveLoader
-- RAR archives need the `rarfile` package and an `unrar` program; tar and zip archives are
   read with the standard library.

missing: IterDataPipe.list_files_by_ais, IterDataPipe.load_files_by_ais,
    datapipes.iter.AISFileLister, datapipes.iter.AISFileLoader
-- AIStore needs its own client; `list_files_by_fsspec` and `open_files_by_fsspec` reach any
   store fsspec has a driver for.

missing: IterDataPipe.list_files_by_iopath, IterDataPipe.open_files_by_iopath,
    IterDataPipe.save_by_iopath, datapipes.iter.IoPathFileLister,
    datapipes.iter.IoPathFileOpener, datapipes.iter.IoPathSaver
-- iopath's path managers are covered by the fsspec pipes (same arguments but
   `pathmgr`/`handler`).

missing: IterDataPipe.read_from_gdrive, datapipes.iter.GDriveReader
-- it scrapes Google Drive's download page for a confirmation token, which no test here can
   reach; `read_from_http` reads a direct-download link.

missing: datapipes.iter.HuggingFaceHubReader
-- it needs the `datasets` package and the network; iterate the dataset with
   `IterableWrapper(datasets.load_dataset(...))`.

missing: IterDataPipe.trace_as_dataframe, IterDataPipe._dataframes_as_tuples,
    IterDataPipe._dataframes_concat, IterDataPipe._dataframes_filter,
    IterDataPipe._dataframes_per_row, IterDataPipe._dataframes_shuffle,
    IterDataPipe._to_dataframes_pipe
-- torch's experimental pandas DataFrame tracing and its private helper pipes; `dataframe`
   makes `pyarrow.Table`s instead.

missing: IterDataPipe.memory_cell
-- a private helper of TorchData's `on_disk_cache`; ours does not need it.

behaviour: IterDataPipe.collate, datapipes.iter.Collator
-- batches become NumPy arrays where torch makes tensors, and a tuple stays a tuple where
   torch makes a list, so a batch feeds a `jit` step as it is.

behaviour: IterDataPipe.pin_memory, datapipes.iter.PinMemory
-- TorchData raises without CUDA; outputs here are NumPy arrays in host memory, so the pipe
   applies `pin_memory_fn` (a copy of the containers) and pins nothing.

behaviour: IterDataPipe.fullsync, datapipes.iter.FullSync
-- TorchData raises unless `torch.distributed` is initialised; here one process passes the
   items through, and the DataLoader stops every rank at the shortest rank's count.

behaviour: IterDataPipe.dataframe, IterDataPipe.load_parquet_as_df,
    datapipes.iter.DataFrameMaker, datapipes.iter.ParquetDataFrameLoader
-- TorchArrow is discontinued; these make `pyarrow.Table`s (the `arrow` extra) with
   TorchData's arguments.

behaviour: IterDataPipe.load_from_tfrecord
-- features become NumPy arrays (and lists of `bytes`) where TorchData makes tensors.
   TorchData 0.9's reader does not run on protobuf 4 or later, this one needs 4.22, so the
   two are not run side by side.

behaviour: IterDataPipe.to_map_datapipe, datapipes.map.IterToMapConverter
-- `len()` is the number of distinct keys; TorchData's is its source's length until a lookup
   has loaded the map.

signature: datapipes.iter.S3FileLister, datapipes.iter.S3FileLoader
-- extra keyword arguments go to `s3fs.S3FileSystem` (e.g. `endpoint_url=`), since the S3
   pipes run on s3fs rather than TorchData's AWS SDK extension.

signature: datapipes.iter.TFRecordLoader
-- keyword-only `check_crc=True` checks both masked CRC-32Cs of every record; `False` skips
   that.
"""


def _rows(table: str) -> tuple[Difference, ...]:
    rows = []
    for block in table.strip().split("\n\n"):
        head, _, reason = block.partition("\n-- ")
        kind, _, names = head.partition(": ")
        rows.append(Difference(tuple(n.strip() for n in names.split(",")), kind,
                               " ".join(reason.split())))
    return tuple(rows)


DIFFERENCES = _rows(_TABLE)


def by_name() -> dict[str, Difference]:
    """Each listed name with its row (a name is in one row only)."""
    rows = {}
    for row in DIFFERENCES:
        for name in row.names:
            if name in rows:
                raise ValueError(f"{name} is in two rows of DIFFERENCES")
            rows[name] = row
    return rows


def markdown() -> str:
    """The docs/data.md table of the differences, one row per entry."""
    lines = ["| TorchData name | kind | why |", "|---|---|---|"]
    for row in DIFFERENCES:
        names = ", ".join(f"`{name}`" for name in row.names)
        lines.append(f"| {names} | {row.kind} | {row.reason} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())

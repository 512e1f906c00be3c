"""Arrow DataFrames: ``DataFrameMaker`` (``dataframe``) and ``ParquetDataFrameLoader``
(``load_parquet_as_df``), TorchData's TorchArrow pipes on ``pyarrow.Table``.

They need the optional package pyarrow (``pip install 'functorch_core[arrow]'``). A
``dtype`` is a ``pyarrow.Schema`` or a ``pyarrow.struct`` type (TorchArrow's ``Struct``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..datapipe import IterDataPipe, functional_datapipe
from ._pipeutil import LazyModule, check_positive

pa, pq = LazyModule("pyarrow"), LazyModule("pyarrow.parquet")    # the optional arrow extra

__all__ = ["DataFrameMaker", "ParquetDataFrameLoader"]


def _need_pyarrow(call: str) -> None:
    if not pa.available():
        raise ModuleNotFoundError(f"{call} needs the optional package pyarrow "
                                  "(pip install 'functorch_core[arrow]')")


def _check_device(call: str, device) -> None:
    if device not in ("", "cpu", None):
        raise ValueError(f"{call}(device={device!r}): Arrow tables live in host memory; "
                         "expected '' or 'cpu'")


def _schema(call: str, dtype):
    """``dtype`` as a ``pyarrow.Schema`` (or ``None``)."""
    if dtype is None or isinstance(dtype, pa.Schema):
        return dtype
    if isinstance(dtype, pa.StructType):
        return pa.schema([dtype.field(i) for i in range(dtype.num_fields)])
    raise TypeError(f"{call}(dtype={dtype!r}): expected a pyarrow.Schema or a pyarrow.struct "
                    "type")


def _table(rows: list, schema, columns, call: str):
    """One table from a batch of rows: tuples/lists (columns by position), dicts, or scalars."""
    first = rows[0]
    if isinstance(first, Mapping):
        table = pa.Table.from_pylist(rows, schema=schema)
        return table if columns is None else table.rename_columns(list(columns))
    if isinstance(first, (tuple, list)):
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise ValueError(f"{call}: the rows have different lengths {sorted(widths)}")
        cols = [list(c) for c in zip(*rows, strict=True)]
    else:
        cols = [rows]
    if columns is not None:
        names = list(columns)
    elif schema is not None:
        names = schema.names
    else:
        names = [f"f{i}" for i in range(len(cols))]
    if len(names) != len(cols):
        raise ValueError(f"{call}: {len(names)} column names {names} for rows of {len(cols)} "
                         "values")
    if schema is None:
        return pa.table(dict(zip(names, cols, strict=True)))
    arrays = [pa.array(c, type=schema.field(i).type) for i, c in enumerate(cols)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        [schema.field(i).with_name(n) for i, n in enumerate(names)]))


@functional_datapipe("dataframe")
class DataFrameMaker(IterDataPipe):
    """Group rows into ``pyarrow.Table``s of ``dataframe_size`` rows (functional name:
    ``dataframe``); the last may be shorter.

    A row is a tuple or list (one value per column), a dict (column name to
    value) or a single value (one column).

    Args:
        source_dp (IterDataPipe): the rows.
        dataframe_size (int): rows per table. Default: ``1000``.
        dtype (pyarrow.Schema or pyarrow.struct, optional): the column types
            (and names). Default: ``None`` (inferred by pyarrow).
        dtype_generator (callable, optional): called with no argument to make
            ``dtype``; it wins over ``dtype`` (for a dtype that cannot be
            pickled). Default: ``None``.
        columns (list of str, optional): the column names. Default: ``None``
            (the schema's, else ``f0, f1, ...``).
        device (str): ``""`` or ``"cpu"`` (tables live in host memory). Default: ``""``.

    Example::

        >>> import pyarrow as pa
        >>> dp = IterableWrapper([(i, str(i)) for i in range(5)])
        >>> tables = list(dp.dataframe(dataframe_size=2, columns=["n", "s"]))
        >>> [t.num_rows for t in tables], tables[0].column("n").to_pylist()
        ([2, 2, 1], [0, 1])
    """

    _repr_args = ("dataframe_size",)

    def __init__(self, source_dp, dataframe_size=1000, dtype=None, dtype_generator=None,
                 columns=None, device=""):
        _need_pyarrow("DataFrameMaker")
        check_positive("DataFrameMaker", "dataframe_size", dataframe_size)
        _check_device("DataFrameMaker", device)
        if dtype_generator is None:
            _schema("DataFrameMaker", dtype)
        self.source_dp = source_dp
        self.dataframe_size = dataframe_size
        self.dtype = dtype
        self.dtype_generator = dtype_generator
        self.columns = columns
        self.device = device

    def __iter__(self):
        dtype = self.dtype_generator() if self.dtype_generator is not None else self.dtype
        schema = _schema("DataFrameMaker", dtype)
        rows: list = []
        for row in self.source_dp:
            rows.append(row)
            if len(rows) == self.dataframe_size:
                yield _table(rows, schema, self.columns, "DataFrameMaker")
                rows = []
        if rows:
            yield _table(rows, schema, self.columns, "DataFrameMaker")

    def __len__(self) -> int:
        return -(-len(self.source_dp) // self.dataframe_size)


@functional_datapipe("load_parquet_as_df")
class ParquetDataFrameLoader(IterDataPipe):
    """Yield one ``pyarrow.Table`` per row group of each Parquet file (functional name:
    ``load_parquet_as_df``).

    Args:
        source_dp (IterDataPipe): paths of Parquet files.
        dtype (pyarrow.Schema or pyarrow.struct, optional): cast each table to
            it. Default: ``None`` (the file's types).
        columns (list of str, optional): read only these columns. Default:
            ``None`` (all).
        device (str): ``""`` or ``"cpu"``. Default: ``""``.
        use_threads (bool): read the columns in parallel threads. Default: ``False``.

    Example::

        >>> tables = FileLister(".", masks="*.parquet").load_parquet_as_df()  # doctest: +SKIP
    """

    def __init__(self, source_dp, dtype=None, columns=None, device="", use_threads=False):
        _need_pyarrow("ParquetDataFrameLoader")
        _check_device("ParquetDataFrameLoader", device)
        self.schema = _schema("ParquetDataFrameLoader", dtype)
        self.source_dp = source_dp
        self.dtype = dtype
        self.columns = columns
        self.device = device
        self.use_threads = use_threads

    def __iter__(self):
        for path in self.source_dp:
            try:
                file = pq.ParquetFile(path)
            except (OSError, pa.ArrowInvalid) as e:
                raise type(e)(f"ParquetDataFrameLoader: {path}: {e}") from None
            for i in range(file.num_row_groups):
                table = file.read_row_group(i, columns=self.columns, use_threads=self.use_threads)
                yield table if self.schema is None else table.cast(self.schema)

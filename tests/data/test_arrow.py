"""DataFrameMaker and ParquetDataFrameLoader on pyarrow (TorchData's TorchArrow pipes)."""

import doctest

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import functorch_core.data.iter.arrow as arrow_module  # noqa: E402
from functorch_core.data import (  # noqa: E402
    DataFrameMaker,
    FileLister,
    IterableWrapper,
    ParquetDataFrameLoader,
)


def test_dataframe_groups_rows_into_tables():
    rows = [(i, float(i) / 2, f"s{i}") for i in range(7)]
    tables = list(IterableWrapper(rows).dataframe(dataframe_size=3))
    assert [t.num_rows for t in tables] == [3, 3, 1]
    assert tables[0].column_names == ["f0", "f1", "f2"]
    assert [r for t in tables for r in zip(*[c.to_pylist() for c in t.columns])] == rows
    assert len(DataFrameMaker(IterableWrapper(rows), dataframe_size=3)) == 3
    schema = pa.schema([("a", pa.int32()), ("b", pa.float32()), ("c", pa.string())])
    typed = next(iter(DataFrameMaker(IterableWrapper(rows), dtype=schema)))
    assert typed.schema == schema and typed.num_rows == 7
    struct = pa.struct([("x", pa.int16())])
    gen = next(iter(IterableWrapper([(1,), (2,)]).dataframe(dtype_generator=lambda: struct)))
    assert gen.schema.field("x").type == pa.int16() and gen.column("x").to_pylist() == [1, 2]
    named = next(iter(IterableWrapper([(1,), (2,)]).dataframe(dtype=struct, columns=["y"])))
    assert named.column_names == ["y"] and named.schema.field("y").type == pa.int16()
    dicts = next(iter(IterableWrapper([{"k": 1}, {"k": 2}]).dataframe()))
    assert dicts.column("k").to_pylist() == [1, 2]
    assert next(iter(IterableWrapper([5, 6]).dataframe())).column("f0").to_pylist() == [5, 6]


def test_dataframe_errors():
    with pytest.raises(ValueError, match="dataframe_size must be a positive int"):
        DataFrameMaker(IterableWrapper([]), dataframe_size=0)
    with pytest.raises(ValueError, match="Arrow tables live in host memory"):
        DataFrameMaker(IterableWrapper([]), device="cuda")
    with pytest.raises(TypeError, match=r"expected a pyarrow\.Schema or a pyarrow\.struct"):
        DataFrameMaker(IterableWrapper([]), dtype=int)
    with pytest.raises(ValueError, match="different lengths"):
        list(IterableWrapper([(1, 2), (3,)]).dataframe())
    with pytest.raises(ValueError, match=r"1 column names \['a'\] for rows of 2 values"):
        list(IterableWrapper([(1, 2)]).dataframe(columns=["a"]))


def test_parquet_one_table_per_row_group(tmp_path):
    table = pa.table({"v": list(range(10)), "w": [str(i) for i in range(10)]})
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=4)
    pq.write_table(table.slice(0, 3), tmp_path / "b.parquet")
    got = list(FileLister(str(tmp_path), masks="*.parquet").load_parquet_as_df())
    assert [t.num_rows for t in got] == [4, 4, 2, 3]
    assert pa.concat_tables(got[:3]).equals(table)
    only_v = list(ParquetDataFrameLoader(IterableWrapper([str(tmp_path / "b.parquet")]),
                                         columns=["v"], use_threads=True))
    assert only_v[0].column_names == ["v"]
    cast = next(iter(ParquetDataFrameLoader(IterableWrapper([str(tmp_path / "b.parquet")]),
                                            dtype=pa.schema([("v", pa.int8()),
                                                             ("w", pa.string())]))))
    assert cast.schema.field("v").type == pa.int8()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(pa.ArrowInvalid, match=r"ParquetDataFrameLoader: .*bad\.parquet"):
        list(ParquetDataFrameLoader(IterableWrapper([str(bad)])))


def test_arrow_docstrings_run():
    result = doctest.testmod(arrow_module, extraglobs={"IterableWrapper": IterableWrapper})
    assert result.attempted == 4 and result.failed == 0

# `make demo` and `make test` work on a fresh machine with Python >= 3.10 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST := $(BIN)/python -m pytest

.PHONY: demo test test-gpu-sim test-torchdata lint bench clean

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: install python3-venv (Debian: apt-get install python3-venv)"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip

# numpy, scipy, llvmlite, ml_dtypes (~390 MB installed)
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	@touch $@

# + pytest, hypothesis, ruff (~15 MB); the data readers' extras so their tests run:
# protobuf (~3 MB), pyarrow (~170 MB), s3fs + botocore (~45 MB) and moto's S3 server (~100 MB);
# mpi4py + MPICH (~30 MB) for the multi-process tests under mpiexec
$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test,tfrecord,arrow,s3,s3-test,distributed]'
	@touch $@ $(VENV)/.installed

# + numba-cuda and NVIDIA's compiler wheels for the CUDA simulator and PTX checks (~420 MB of wheels)
$(VENV)/.installed-gpu-sim: $(VENV)/.installed-test
	$(BIN)/python -m pip install -q -e '.[test,cuda-sim]'
	@touch $@

# torch 2.5.1 (its wheel brings NVIDIA's CUDA libraries, ~4 GB) and torchdata 0.9 in a venv of
# their own, for the data tests that compare with TorchData (tests/data/test_torchdata_*.py)
TDVENV := .tdvenv
$(TDVENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(TDVENV)
	$(TDVENV)/bin/python -m pip install -q torch==2.5.1 torchdata==0.9.0 portalocker \
		numpy scipy llvmlite hypothesis pytest
	$(TDVENV)/bin/python -m pip install -q --no-deps -e .
	@touch $@

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

# everything but the CUDA simulator's tests (~21 min on 2 cores)
test: $(VENV)/.installed-test
	$(PYTEST) -m "not gpu_sim" --durations=15

# the CUDA backend under numba-cuda's simulator, and its kernels through PTX + ptxas (5-10 min)
test-gpu-sim: $(VENV)/.installed-gpu-sim
	NUMBA_ENABLE_CUDASIM=1 $(PYTEST) -m gpu_sim

# tests/data against TorchData 0.9: the registry, the differential test and the older
# comparisons that skip without torchdata (~1 min)
test-torchdata: $(TDVENV)/.installed
	$(TDVENV)/bin/python -m pytest tests/data

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(TDVENV) build *.egg-info

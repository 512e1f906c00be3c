"""DataPipes: composable, resumable data loading (TorchData's names and semantics)."""

from .datapipe import IterDataPipe, MapDataPipe, functional_datapipe

__all__ = ["IterDataPipe", "MapDataPipe", "functional_datapipe"]

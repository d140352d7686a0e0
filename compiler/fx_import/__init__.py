"""Import of ATen-level FX graphs into the ``tsr`` dialect."""

from .importer import FxImporter, ImportResult, import_graph, tensor_type

__all__ = ["FxImporter", "ImportResult", "import_graph", "tensor_type"]

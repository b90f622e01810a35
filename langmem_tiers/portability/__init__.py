"""Memory its users own: export, import, moving between backends (erasure: the store's
``erasure.py`` and ``MemoryEngine.erase_scope``)."""

from langmem_tiers.portability.exporter import aexport_records, export_records
from langmem_tiers.portability.format import FORMAT_NAME, FORMAT_VERSION
from langmem_tiers.portability.importer import ImportResult, aimport_records, import_records
from langmem_tiers.portability.migrate import migrate

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ImportResult",
    "aexport_records",
    "aimport_records",
    "export_records",
    "import_records",
    "migrate",
]
